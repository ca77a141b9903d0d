use nn

model m {
  input x: f32[batch, 8, 4]
  output y = positional_embedding(x, 6)
}
