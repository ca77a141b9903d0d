# issue 14: the per-channel statistics need an f32 tensor with a channel axis (rank >= 1)
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  s = prim.reduce_mean(image, axes: 15)
  loss = prim.reduce_mean(prim.channel_var(s, s), axes: 1)
}
