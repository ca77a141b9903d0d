# issue 14: causal_matmul masks a square matrix; here op(a) is 4 x 3
model m {
  input x: f32[batch, 4, 3]
  input v: f32[batch, 3, 2]
  y = prim.causal_matmul(x, v, tri: 1)
  output y
}
