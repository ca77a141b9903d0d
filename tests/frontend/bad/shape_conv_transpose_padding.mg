use nn

model m {
  input image: f32[batch, 2, 2, 4]
  param w: f32[2, 2, 3, 4] = zeros
  x = prim.conv2d_transpose(image, w, pad_t: 2, pad_b: 2)
  output x
}
