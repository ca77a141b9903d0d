# issue 14: a conv2d_bn_epilogue activation outside none, relu, tanh, sigmoid
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  w = prim.reshape(prim.reduce_sum(image, axes: 15), 1, 1, 1, 1)
  v = prim.reshape(prim.reduce_sum(image, axes: 15), 1)
  x = prim.conv2d_bn_epilogue(image, w, image, v, v, v, act: 4)
  loss = prim.reduce_mean(x, axes: 14)
}
