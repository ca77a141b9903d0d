# issue 14: normalize divides by sqrt(variance + epsilon), epsilon >= 0
model m {
  input x: f32[batch, 4]
  y = prim.normalize(x, epsilon: -0.5)
  output y
}
