use nn

model m {
  input image: f32[batch, 784]
