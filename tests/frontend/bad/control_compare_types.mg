model m {
  input x: f32[batch, 4]
  y = x * ("a" < 2)
  output y
}
