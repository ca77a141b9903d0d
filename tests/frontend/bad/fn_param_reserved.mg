fn f(x, name: str) {
  return x
}

model m {
  input x: f32[batch, 8]
  output y = f(x, "a")
}
