# issue 14: causal_matmul's triangle is the output (tri 0), a (1) or b (2),
# lower (upper 0) or upper (upper 1)
model m {
  input x: f32[batch, 4, 4]
  y = prim.causal_matmul(x, x, tri: 3)
  output y
}
