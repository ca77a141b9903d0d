# resnet20.mg - He et al.'s CIFAR ResNet-20 (3 stages x 3 basic blocks, 16/32/64
# filters, batch norm, a 1x1 projection where a block changes shape) for 28x28
# Fashion-MNIST: 272,186 trainable params and 1,568 of batch-norm state.
# bench/resnet20.sh trains it against the same network in PyTorch (bench/torch_resnet20.py).
use nn

# a convolution without bias (batch_norm's beta takes its place), he_normal
fn conv_bn(x: f32, filters: int, kernel: int = 3, strides: int = 1) {
  return batch_norm(conv2d(x, filters, kernel, strides: strides, padding: "same", use_bias: false,
                           kernel_initializer: he_normal))
}

# two 3x3 convolutions and a shortcut: the input itself, or a strided 1x1
# convolution when the block halves the image or widens the channels
fn basic_block(x: f32[b, h, w, cin], filters: int, strides: int) {
  y = relu(conv_bn(x, filters, strides: strides))
  y = conv_bn(y, filters)
  shortcut = x
  if strides != 1 or cin != filters {
    shortcut = conv_bn(x, filters, kernel: 1, strides: strides)
  }
  return relu(y + shortcut)
}

model resnet20 {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  x = relu(conv_bn(image, 16))
  filters = [16, 32, 64]
  for stage in range(3) {
    for i in range(3) {
      strides = 1
      if stage > 0 and i == 0 {
        strides = 2
      }
      x = basic_block(x, filters[stage], strides)
    }
  }
  x = global_average_pool2d(x)
  logits = dense(x, 10)

  loss            = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train resnet20 {
  # 3 epochs of 468 steps at global batch 128
  optimizer = sgd(learning_rate: cosine_decay(0.1, decay_steps: 1404), momentum: 0.9)
  batch     = 128 global
  epochs    = 3
}
