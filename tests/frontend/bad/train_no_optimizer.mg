model m {
  input x: f32[batch, 8]
  output x
}

train m {
  batch = 8 global
}
