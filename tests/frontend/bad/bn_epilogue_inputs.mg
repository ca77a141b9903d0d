# issue 14: conv2d_bn_epilogue takes (x, w, c, mean, scale, beta) or those and a residual
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  w = prim.reshape(prim.reduce_sum(image, axes: 15), 1, 1, 1, 1)
  v = prim.reshape(prim.reduce_sum(image, axes: 15), 1)
  x = prim.conv2d_bn_epilogue(image, w, image, v, v)
  loss = prim.reduce_mean(x, axes: 14)
}
