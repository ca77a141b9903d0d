# unet.mg - a small U-Net (Ronneberger et al.: an encoder of conv blocks and
# max-pools, a decoder of transposed convolutions, each joined to the encoder
# block of its size by a skip concatenation) on a segmentation task made from
# Fashion-MNIST: from the image at half resolution (each 2x2 block averaged,
# then blown up again), predict the full-resolution mask of the garment's
# bright pixels (> 0.5). The mask is computed in the graph from the image, so
# `mgc run` trains it on the Fashion-MNIST files as they are. Pixel accuracy
# is the metric; predicting "background" everywhere scores 0.685 on the test set.
use nn

# two 3x3 convolutions with batch norm and relu, the size kept
fn conv_block(x: f32, filters: int) {
  x = relu(batch_norm(conv2d(x, filters, 3, padding: "same", use_bias: false, kernel_initializer: he_normal)))
  return relu(batch_norm(conv2d(x, filters, 3, padding: "same", use_bias: false, kernel_initializer: he_normal)))
}

# doubles the size, then joins the skip connection along the channels
fn up_block(x: f32, skip: f32, filters: int) {
  x = conv2d_transpose(x, filters, 2, strides: 2, padding: "same")
  return conv_block(concat([x, skip], axis: -1), filters)
}

model unet {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]                              # unused: the target is made from the image

  blurred = upsampling2d(avg_pool2d(image, 2), size: 2)
  mask    = image > 0.5                                # f32 0/1 target, no gradient

  e1 = conv_block(blurred, 16)                         # 28x28x16
  e2 = conv_block(max_pool2d(e1, 2), 32)               # 14x14x32
  bottom = conv_block(max_pool2d(e2, 2), 64)           # 7x7x64
  d2 = up_block(bottom, e2, 32)                        # 14x14x32
  d1 = up_block(d2, e1, 16)                            # 28x28x16
  logits = conv2d(d1, 1, 1)                            # 28x28x1, one logit per pixel

  loss                  = binary_crossentropy(flatten(logits), flatten(mask), from_logits: true)
  metric pixel_accuracy = binary_accuracy(sigmoid(flatten(logits)), flatten(mask))
  output mask_logits    = logits
}

train unet {
  optimizer = adam(learning_rate: 0.001)
  batch     = 32 per replica
}
