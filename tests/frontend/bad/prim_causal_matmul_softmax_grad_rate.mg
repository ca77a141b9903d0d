# issue 14: causal_matmul_softmax_grad's rate is a dropout rate, in [0, 1)
model m {
  input q: f32[batch, 4, 8]
  input w: f32[batch, 4, 4]
  y = prim.causal_matmul_softmax_grad(q, q, w, trans_b: 1, scale: 0.5, rate: -0.1)
  output y
}
