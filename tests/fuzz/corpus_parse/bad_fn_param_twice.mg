fn f(x, x) {
  return x
}

model m {
  input x: f32[batch, 4]
  y = f(x, x)
  output y
}
