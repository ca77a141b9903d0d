model m {
  input x: f32[batch, 8]
  output x
}

train m {
  optimizer = sgd(momentum: -0.5)
  batch = 8 global
}
