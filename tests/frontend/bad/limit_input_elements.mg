model m {
  input x: f32[batch, 1048576, 1048576]
  output x
}
