# Keras 3 optimizer formulas, 3 steps on l_b = sum (k - x1_b)^2 + sum (bias - x2_b)^2
import math
x1=[[1,2,3],[-1,0.5,0]]; x2=[[0.2,0.4],[-0.6,1.0]]
def grads(k,b):
    gk=[2*(k[j]-sum(r[j] for r in x1)/2) for j in range(3)]
    gb=[2*(b[j]-sum(r[j] for r in x2)/2) for j in range(2)]
    return gk,gb
def run(kind, lr, momentum=0, nesterov=False, b1=0.9, b2=0.999, eps=1e-7, wd=0, rho=0.9):
    P=[[0.5,-1.0,2.0],[0.1,-0.3]]
    S=[[[0.0]*len(p) for _ in range(2)] for p in P]
    for t in range(1,4):
        G=grads(*P)
        for p,g,s in zip(P,G,S):
            for j in range(len(p)):
                if kind=='sgd':
                    if momentum:
                        s[0][j]=momentum*s[0][j]-lr*g[j]
                        p[j]+= momentum*s[0][j]-lr*g[j] if nesterov else s[0][j]
                    else: p[j]-=lr*g[j]
                elif kind=='adam':
                    p[j]-=p[j]*wd*lr
                    a=lr*math.sqrt(1-b2**t)/(1-b1**t)
                    s[0][j]+=(g[j]-s[0][j])*(1-b1); s[1][j]+=(g[j]*g[j]-s[1][j])*(1-b2)
                    p[j]-=a*s[0][j]/(math.sqrt(s[1][j])+eps)
                else:
                    s[0][j]=rho*s[0][j]+(1-rho)*g[j]*g[j]
                    inc=lr*g[j]/math.sqrt(s[0][j]+eps)
                    if momentum: s[1][j]=momentum*s[1][j]+inc; p[j]-=s[1][j]
                    else: p[j]-=inc
    return P
cfg=[('sgd',dict(lr=0.1)),('sgd',dict(lr=0.1,momentum=0.9)),('sgd',dict(lr=0.1,momentum=0.9,nesterov=True)),
     ('adam',dict(lr=0.1)),('adam',dict(lr=0.1,wd=0.004)),('rmsprop',dict(lr=0.01)),('rmsprop',dict(lr=0.01,momentum=0.5))]
for k,c in cfg:
    P=run(k,**c)
    print(k,c, "{"+", ".join("%.17g"%v for v in P[0]+P[1])+"}")
