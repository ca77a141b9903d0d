use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = prim.concat(x, x, axis: 4)
  output y
}
