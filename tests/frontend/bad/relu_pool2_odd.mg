# issue 14: conv2d_relu_pool2 pools 2x2 windows of stride 2 that tile its convolution's output
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  w = prim.reshape(prim.reduce_sum(image, axes: 15), 1, 1, 1, 1)
  v = prim.reshape(prim.reduce_sum(image, axes: 15), 1)
  x = prim.conv2d_relu_pool2(image, w, v, pad_t: 1)
  loss = prim.reduce_mean(x, axes: 15)
}
