fn f(x) {
  return x
}

fn f(x) {
  return x
}

model m {
  input x: f32[batch, 4]
  y = f(x)
  output y
}
