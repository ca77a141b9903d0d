model m {
  input x: f32[batch, 8]
  input k: i32[batch, 8]
  y = x + k
  output y
}
