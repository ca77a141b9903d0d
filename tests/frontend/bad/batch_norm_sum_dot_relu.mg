# issue 14: channel_sum_dot_relu's y has the type of x
model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  m = prim.channel_mean(image)
  loss = prim.reduce_mean(prim.channel_sum_dot_relu(image, m, m, image), axes: 1)
}
