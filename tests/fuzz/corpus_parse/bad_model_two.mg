model a {
  input x: f32[batch, 4]
  output x
}

model b {
  input x: f32[batch, 4]
  output x
}
