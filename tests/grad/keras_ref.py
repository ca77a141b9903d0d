# Keras 3 optimizer formulas, 3 steps on l_b = sum (k - x1_b)^2 + sum (bias - x2_b)^2
# (the expected values of tests/grad/test_grad.c's optimizer cases)
import math
x1=[[1,2,3],[-1,0.5,0]]; x2=[[0.2,0.4],[-0.6,1.0]]
def grads(k,b):
    gk=[2*(k[j]-sum(r[j] for r in x1)/2) for j in range(3)]
    gb=[2*(b[j]-sum(r[j] for r in x2)/2) for j in range(2)]
    return gk,gb
def norm(vs): return math.sqrt(sum(x*x for v in vs for x in v))
def clip(G, clipnorm, global_clipnorm):
    if clipnorm: return [[x*clipnorm/max(norm([g]),clipnorm) for x in g] for g in G]   # clip_by_norm per variable
    if global_clipnorm:                                                               # clip_by_global_norm
        scale=global_clipnorm*min(1/norm(G),1/global_clipnorm)
        return [[x*scale for x in g] for g in G]
    return G
def nadam_u(b1,i): return b1*(1-0.5*0.96**(0.004*i))
def run(kind, lr, momentum=0, nesterov=False, b1=0.9, b2=0.999, eps=1e-7, wd=0, rho=0.9, acc0=0.1,
        clipnorm=0, global_clipnorm=0):
    P=[[0.5,-1.0,2.0],[0.1,-0.3]]
    S=[[[0.0]*len(p) for _ in range(2)] for p in P]
    if kind=='adagrad': S=[[[acc0]*len(p) for _ in range(2)] for p in P]
    u_product=1.0
    for t in range(1,4):
        G=clip(grads(*P),clipnorm,global_clipnorm)
        u_product*=nadam_u(b1,t)
        for p,g,s in zip(P,G,S):
            for j in range(len(p)): p[j]-=p[j]*wd*lr   # _apply_weight_decay (adam's own below)
            r=[0.0]*len(p)
            for j in range(len(p)):
                if kind=='sgd':
                    if momentum:
                        s[0][j]=momentum*s[0][j]-lr*g[j]
                        p[j]+= momentum*s[0][j]-lr*g[j] if nesterov else s[0][j]
                    else: p[j]-=lr*g[j]
                elif kind=='adam':
                    a=lr*math.sqrt(1-b2**t)/(1-b1**t)
                    s[0][j]+=(g[j]-s[0][j])*(1-b1); s[1][j]+=(g[j]*g[j]-s[1][j])*(1-b2)
                    p[j]-=a*s[0][j]/(math.sqrt(s[1][j])+eps)
                elif kind=='adagrad':
                    s[0][j]+=g[j]*g[j]
                    p[j]-=lr*g[j]/math.sqrt(s[0][j]+eps)
                elif kind=='nadam':
                    ut=nadam_u(b1,t); ut1=nadam_u(b1,t+1)
                    s[0][j]+=(g[j]-s[0][j])*(1-b1); s[1][j]+=(g[j]*g[j]-s[1][j])*(1-b2)
                    m_hat=ut1*s[0][j]/(1-u_product*ut1)+(1-ut)*g[j]/(1-u_product)
                    p[j]-=m_hat*lr/(math.sqrt(s[1][j]/(1-b2**t))+eps)
                elif kind=='lamb':
                    s[0][j]=s[0][j]*b1+g[j]*(1-b1); s[1][j]=s[1][j]*b2+g[j]*g[j]*(1-b2)
                    r[j]=(s[0][j]/(1-b1**t))/(math.sqrt(s[1][j]/(1-b2**t))+eps)
                else:
                    s[0][j]=rho*s[0][j]+(1-rho)*g[j]*g[j]
                    inc=lr*g[j]/math.sqrt(s[0][j]+eps)
                    if momentum: s[1][j]=momentum*s[1][j]+inc; p[j]-=s[1][j]
                    else: p[j]-=inc
            if kind=='lamb':
                w_norm=norm([p]); g_norm=norm([r])
                ratio=w_norm/g_norm if w_norm>0 and g_norm>0 else 1.0
                for j in range(len(p)): p[j]-=ratio*lr*r[j]
    return P
cfg=[('sgd',dict(lr=0.1)),('sgd',dict(lr=0.1,momentum=0.9)),('sgd',dict(lr=0.1,momentum=0.9,nesterov=True)),
     ('adam',dict(lr=0.1)),('adam',dict(lr=0.1,wd=0.004)),('rmsprop',dict(lr=0.01)),('rmsprop',dict(lr=0.01,momentum=0.5)),
     ('sgd',dict(lr=0.1,momentum=0.9,wd=0.01,clipnorm=1.0)),('adam',dict(lr=0.1,global_clipnorm=1.0)),
     ('rmsprop',dict(lr=0.01,wd=0.01,clipnorm=0.5)),
     ('adagrad',dict(lr=0.1)),('adagrad',dict(lr=0.1,acc0=0.5,wd=0.01,global_clipnorm=1.0)),
     ('nadam',dict(lr=0.1)),('nadam',dict(lr=0.1,wd=0.01,clipnorm=1.0)),
     ('lamb',dict(lr=0.1,eps=1e-6)),('lamb',dict(lr=0.1,eps=1e-6,wd=0.01,global_clipnorm=1.0))]
for k,c in cfg:
    P=run(k,**c)
    print(k,c, "{"+", ".join("%.17g"%v for v in P[0]+P[1])+"}")
