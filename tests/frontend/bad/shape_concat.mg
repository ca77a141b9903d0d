use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = concat([x, prim.reshape(x, batch, 6, 4, 3)], axis: 2)
  output y
}
