fn f(x) {
  input y: f32[4]
  return x
}

model m {
  input x: f32[batch, 4]
  y = f(x)
  output y
}
