# issue 14: scale_shift's mean, scale and shift are f32 vectors of x's channels (its last axis)
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  m = prim.channel_mean(image)
  x = prim.scale_shift(image, m, prim.reshape(image, 784 * batch), m)
  loss = prim.reduce_mean(x, axes: 15)
}
