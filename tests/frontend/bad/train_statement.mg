model m {
  input x: f32[batch, 8]
  output x
}

train m {
  optimizer = adam
  batch = 8 global
  output x
}
