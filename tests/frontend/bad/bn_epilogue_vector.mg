# issue 14: conv2d_bn_epilogue's mean, scale and beta are vectors of the output's channels
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  w = prim.reshape(prim.reduce_sum(image, axes: 15), 1, 1, 1, 1)
  v = prim.reshape(prim.reduce_sum(image, axes: 15), 1)
  x = prim.conv2d_bn_epilogue(image, w, image, v, image, v)
  loss = prim.reduce_mean(x, axes: 14)
}
