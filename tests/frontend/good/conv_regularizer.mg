# conv_regularizer.mg - conv2d takes kernel_regularizer / bias_regularizer as
# dense does; the penalties join the per-example loss (an add after the xent)
use nn

model conv_regularizer {
  input image: f32[batch, 8, 8, 1]
  input label: i32[batch]
  x = conv2d(image, filters: 4, kernel: 3, kernel_regularizer: l2(1e-4), bias_regularizer: l1(1e-5))
  logits = dense(flatten(x), 3)
  loss = sparse_softmax_cross_entropy(logits, label)
}
