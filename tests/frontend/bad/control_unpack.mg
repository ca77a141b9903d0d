fn two(x) {
  return x, x
}
model m {
  input x: f32[batch, 4]
  a, b, c = two(x)
  output a
}
