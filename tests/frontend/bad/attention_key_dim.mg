use nn

model m {
  input x: f32[batch, 8, 4]
  output y = multi_head_attention(x, heads: 2, key_dim: 0)
}
