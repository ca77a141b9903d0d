# issue 14: causal_matmul_softmax_grad's weights y have the scores' shape
model m {
  input q: f32[batch, 4, 8]
  input w: f32[batch, 4, 5]
  y = prim.causal_matmul_softmax_grad(q, q, w, trans_b: 1, scale: 0.5, rate: 0.1)
  output y
}
