use nn

model m {
  input x: f32[batch, 4, 4]
  output y = x * causal_mask(0)
}
