model m {
  input x: f32[batch, 8]
  output x
}

train m {
  optimizer = sgd(0.1, 0.9)
  batch = 8 global
}
