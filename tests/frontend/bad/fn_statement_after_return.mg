fn f(x) {
  return x
  y = x
}

model m {
  input x: f32[batch, 8]
  y = f(x)
  output y
}
