# issue 14: conv2d_relu_pool2_grad_filter's dy has the pooled output's type
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  w = prim.reshape(prim.reduce_sum(image, axes: 15), 1, 1, 1, 1)
  v = prim.reshape(prim.reduce_sum(image, axes: 15), 1)
  dw = prim.conv2d_relu_pool2_grad_filter(image, w, prim.conv2d_relu_pool2(image, w, v), image)
  loss = prim.reduce_mean(prim.reshape(dw, 1), axes: 1)
}
