use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = prim.transpose(x, perm: 5)
  output y
}
