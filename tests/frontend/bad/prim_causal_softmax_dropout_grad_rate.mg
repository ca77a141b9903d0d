# issue 14: causal_softmax_dropout_grad's rate is a dropout rate, in [0, 1)
model m {
  input x: f32[batch, 4, 4]
  y = prim.causal_softmax_dropout_grad(x, x, scale: 0.5, rate: 1.0)
  output y
}
