fn rate() {
  loss += 1.0
  return 0.1
}

model m {
  input x: f32[batch, 8]
  output x
}

train m {
  optimizer = sgd(learning_rate: rate() * 1.0)
  batch = 8 per replica
}
