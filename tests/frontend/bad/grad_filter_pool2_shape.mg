# issue 14: conv2d_grad_filter_pool2's dy is the 2x2 stride-2 max-pool of y (its output's gradient)
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  dw = prim.conv2d_grad_filter_pool2(image, image, image, 1, 1, 1, 1)
  loss = prim.reduce_mean(prim.reshape(dw, 1), axes: 1)
}
