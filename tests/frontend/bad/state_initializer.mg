use nn
model m {
  input x: f32[batch, 4]
  state s: f32[4] = 3
  y = x * s
  output y
}
