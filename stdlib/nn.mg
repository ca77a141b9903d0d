# nn.mg - layers, activations, losses and metrics of the model language,
# written on the primitives of ir/ops.def (called as prim.NAME). Layers follow
# Keras: channels-last images, HWIO filters, glorot_uniform kernels and zero
# biases by default. Initializers (zeros, ones, glorot_uniform, he_normal) are
# built-in names.

# ---- activations ----

fn identity(x) {
  return x
}

fn relu(x: f32) {
  return prim.relu(x)
}

fn sigmoid(x: f32) {
  return prim.sigmoid(x)
}

fn tanh(x: f32) {
  return prim.tanh(x)
}

fn softmax(x: f32) {
  return prim.softmax(x)
}

# a where mask (1/0, as x > y gives) holds, else b; gradients to a where the
# mask is 1 and to b where it is 0 (finite a and b)
fn where(mask: f32, a, b) {
  return mask * a + (1.0 - mask) * b
}

# ---- layers ----

# y = activation(x W + b); params dense/kernel f32[k, units], dense/bias f32[units]
fn dense(x: f32[b, k], units: int, activation: fn = identity,
         kernel_initializer = glorot_uniform, bias_initializer = zeros) {
  param kernel: f32[k, units] = kernel_initializer
  param bias:   f32[units]    = bias_initializer
  return activation(prim.matmul(x, kernel) + bias)
}

# ---- convolutions (Keras Conv2D, DepthwiseConv2D, SeparableConv2D,
# Conv2DTranspose): NHWC images; kernel, strides and dilation are an int n
# (n x n) or a list [h, w]; padding "valid" or "same" ----

# params conv2d/kernel f32[kh, kw, cin / groups, filters], conv2d/bias f32[filters]
fn conv2d(x: f32[b, h, w, cin], filters: int, kernel, strides = 1,
          padding: str = "valid", dilation = 1, groups: int = 1, use_bias = true,
          activation: fn = identity, kernel_initializer = glorot_uniform, bias_initializer = zeros) {
  param kernel: f32[pair(kernel, 0), pair(kernel, 1), cin / max(groups, 1), filters] = kernel_initializer
  y = prim.conv2d(x, kernel, strides: strides, padding: padding, dilation: dilation, groups: groups)
  if use_bias {
    param bias: f32[filters] = bias_initializer
    y = y + bias
  }
  return activation(y)
}

# one filter bank per input channel: params depthwise_conv2d/depthwise_kernel
# f32[kh, kw, cin, depth_multiplier], bias f32[cin * depth_multiplier]; output
# channel c * depth_multiplier + m (a conv2d with groups = cin of the kernel
# reshaped to [kh, kw, 1, cin * depth_multiplier], the same bytes)
fn depthwise_conv2d(x: f32[b, h, w, cin], kernel, depth_multiplier: int = 1, strides = 1,
                    padding: str = "valid", dilation = 1, use_bias = true, activation: fn = identity,
                    depthwise_initializer = glorot_uniform, bias_initializer = zeros) {
  param depthwise_kernel: f32[pair(kernel, 0), pair(kernel, 1), cin, depth_multiplier] = depthwise_initializer
  k = prim.reshape(depthwise_kernel, pair(kernel, 0), pair(kernel, 1), 1, cin * depth_multiplier)
  y = prim.conv2d(x, k, strides: strides, padding: padding, dilation: dilation, groups: cin)
  if use_bias {
    param bias: f32[cin * depth_multiplier] = bias_initializer
    y = y + bias
  }
  return activation(y)
}

# depthwise (as depthwise_conv2d, no bias) then 1x1 pointwise: params
# separable_conv2d/depthwise_kernel f32[kh, kw, cin, depth_multiplier],
# pointwise_kernel f32[1, 1, cin * depth_multiplier, filters], bias f32[filters]
fn separable_conv2d(x: f32[b, h, w, cin], filters: int, kernel, strides = 1, padding: str = "valid",
                    dilation = 1, depth_multiplier: int = 1, use_bias = true, activation: fn = identity,
                    depthwise_initializer = glorot_uniform, pointwise_initializer = glorot_uniform,
                    bias_initializer = zeros) {
  param depthwise_kernel: f32[pair(kernel, 0), pair(kernel, 1), cin, depth_multiplier] = depthwise_initializer
  param pointwise_kernel: f32[1, 1, cin * depth_multiplier, filters] = pointwise_initializer
  k = prim.reshape(depthwise_kernel, pair(kernel, 0), pair(kernel, 1), 1, cin * depth_multiplier)
  d = prim.conv2d(x, k, strides: strides, padding: padding, dilation: dilation, groups: cin)
  y = prim.conv2d(d, pointwise_kernel)
  if use_bias {
    param bias: f32[filters] = bias_initializer
    y = y + bias
  }
  return activation(y)
}

# transposed convolution: params conv2d_transpose/kernel f32[kh, kw, filters, cin],
# bias f32[filters]; output (in - 1) * strides + (kernel - 1) * dilation + 1
# ("valid") or in * strides ("same")
fn conv2d_transpose(x: f32[b, h, w, cin], filters: int, kernel, strides = 1, padding: str = "valid",
                    dilation = 1, use_bias = true, activation: fn = identity,
                    kernel_initializer = glorot_uniform, bias_initializer = zeros) {
  param kernel: f32[pair(kernel, 0), pair(kernel, 1), filters, cin] = kernel_initializer
  y = prim.conv2d_transpose(x, kernel, strides: strides, padding: padding, dilation: dilation)
  if use_bias {
    param bias: f32[filters] = bias_initializer
    y = y + bias
  }
  return activation(y)
}

# pooling windows pool x pool, moving by strides (default: the window)
fn max_pool2d(x: f32[b, h, w, c], pool: int = 2, strides: int = pool, padding: str = "valid") {
  return prim.max_pool2d(x, k_h: pool, k_w: pool, strides: strides, padding: padding)
}

fn avg_pool2d(x: f32[b, h, w, c], pool: int = 2, strides: int = pool, padding: str = "valid") {
  return prim.avg_pool2d(x, k_h: pool, k_w: pool, strides: strides, padding: padding)
}

# [b, ...] -> [b, everything else]
fn flatten(x: f32) {
  return prim.reshape(x, dim(x, 0), size(x) / dim(x, 0))
}

# zeroes a fraction `rate` of the elements while training, scales the rest by 1/(1-rate);
# the identity in eval and predict. seed -1: a mask stream of this call's own
fn dropout(x: f32, rate: float, seed: int = -1) {
  return prim.dropout(x, rate: rate, seed: seed)
}

# ---- losses: the batch mean of a per-example loss ----

fn sparse_softmax_cross_entropy(logits: f32[b, c], labels: i32[b]) {
  return prim.reduce_mean(prim.sparse_xent(logits, labels), axes: 1)
}

fn mean_squared_error(predictions: f32[b, n], targets: f32[b, n]) {
  d = predictions - targets
  return prim.reduce_mean(prim.reduce_mean(d * d, axes: 2), axes: 1)
}

# ---- metrics: the batch mean of a per-example score ----

fn sparse_categorical_accuracy(logits: f32[b, c], labels: i32[b]) {
  return prim.reduce_mean(prim.argmax_match(logits, labels), axes: 1)
}

# ---- normalization ----

# Keras BatchNormalization over the last axis. Training normalizes with the
# batch's mean and (biased) variance and moves the state toward them:
# moving = moving * momentum + batch * (1 - momentum); eval and predict use the
# moving statistics. sync: true takes the statistics over the global batch
# (an all-reduce in the forward pass, Keras' synchronized=True); without it
# each replica uses its own batch and the moving statistics are averaged over
# replicas when saved and before eval (docs/language.md).
fn batch_norm(x: f32, momentum: float = 0.99, epsilon: float = 0.001) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  state moving_mean: f32[c] = zeros
  state moving_variance: f32[c] = ones
  rows = size(x) / c
  batch_mean = prim.reduce_mean(prim.reshape(x, rows, c), axes: 1)
  centered = x - prim.in_training(batch_mean, moving_mean)
  batch_variance = prim.reduce_mean(prim.reshape(centered * centered, rows, c), axes: 1)
  variance = prim.in_training(batch_variance, moving_variance)
  new_mean = prim.assign(moving_mean, moving_mean * momentum + batch_mean * (1.0 - momentum))
  new_variance = prim.assign(moving_variance, moving_variance * momentum + batch_variance * (1.0 - momentum))
  return centered * (gamma / prim.sqrt(variance + epsilon)) + beta
}
