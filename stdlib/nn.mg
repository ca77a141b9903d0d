# nn.mg - layers, activations, losses and metrics of the model language,
# written on the primitives of ir/ops.def (called as prim.NAME). Layers follow
# Keras: channels-last images, HWIO filters, glorot_uniform kernels and zero
# biases by default. Initializers (zeros, ones, glorot_uniform, he_normal,
# truncated_normal(stddev: ..), ...: docs/language.md) are built-in names.

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

fn softmax(x: f32, axis: int = -1) {
  return prim.softmax(x, axis: axis)
}

# a where mask (1/0, as x > y gives) holds, else b; gradients to a where the
# mask is 1 and to b where it is 0 (finite a and b)
fn where(mask: f32, a, b) {
  return mask * a + (1.0 - mask) * b
}

# ---- regularizers (Keras'): a penalty on a param, added to the loss once per step ----

# A regularizer is the list [l1 factor, l2 factor]; [] is none (the layers' default).
fn l1(l1: float = 0.01) {
  return [l1, 0.0]
}

fn l2(l2: float = 0.01) {
  return [0.0, l2]
}

fn l1_l2(l1: float = 0.01, l2: float = 0.01) {
  return [l1, l2]
}

# adds regularizer r's penalty on w to the model's loss, l1 * sum(|w|) +
# l2 * sum(w * w) (loss +=, docs/language.md); returns w
fn regularize(w: f32, r: list) {
  if len(r) > 0 {
    flat = prim.reshape(w, size(w))
    if r[0] != 0 {
      loss += r[0] * prim.reduce_sum(prim.relu(flat) + prim.relu(-flat), axes: 1)
    }
    if r[1] != 0 {
      loss += r[1] * prim.reduce_sum(flat * flat, axes: 1)
    }
  }
  return w
}

# ---- layers ----

# y = activation(x W + b) on the last axis of x [..., k] (Keras Dense: any rank
# >= 2); params dense/kernel f32[k, units], dense/bias f32[units]. A rank-2 x
# is one matmul; a higher rank is reshaped to [rows, k] and back (issue 13).
fn dense(x: f32, units: int, activation: fn = identity,
         kernel_initializer = glorot_uniform, bias_initializer = zeros,
         kernel_regularizer: list = [], bias_regularizer: list = []) {
  if rank(x) < 2 {
    return error("dense needs an input of rank 2 or more, got", x)
  }
  k = dim(x, -1)
  param kernel: f32[k, units] = kernel_initializer
  param bias:   f32[units]    = bias_initializer
  kernel = regularize(kernel, kernel_regularizer)
  bias = regularize(bias, bias_regularizer)
  if rank(x) == 2 {
    return activation(prim.matmul(x, kernel) + bias)
  }
  lead = []
  for i in range(rank(x) - 1) {
    lead = lead + [dim(x, i)]
  }
  y = prim.reshape(prim.matmul(prim.reshape(x, size(x) / k, k), kernel), lead + [units])
  return activation(y + bias)
}

# ---- issue 13: sequence models ----

# Keras/TF matmul: op(a)[..., m, k] x op(b)[..., k, n] -> [..., m, n], the
# leading (batch) axes broadcast (numpy); the transposes act on the last two axes
fn matmul(a: f32, b: f32, transpose_a = false, transpose_b = false) {
  return prim.matmul(a, b, trans_a: transpose_a, trans_b: transpose_b)
}

# ---- convolutions (Keras Conv2D, DepthwiseConv2D, SeparableConv2D,
# Conv2DTranspose): NHWC images; kernel, strides and dilation are an int n
# (n x n) or a list [h, w]; padding "valid" or "same" ----

# params conv2d/kernel f32[kh, kw, cin / groups, filters], conv2d/bias f32[filters]
fn conv2d(x: f32[b, h, w, cin], filters: int, kernel, strides = 1,
          padding: str = "valid", dilation = 1, groups: int = 1, use_bias = true,
          activation: fn = identity, kernel_initializer = glorot_uniform, bias_initializer = zeros,
          kernel_regularizer: list = [], bias_regularizer: list = []) {
  param kernel: f32[pair(kernel, 0), pair(kernel, 1), cin / max(groups, 1), filters] = kernel_initializer
  kernel = regularize(kernel, kernel_regularizer)
  y = prim.conv2d(x, kernel, strides: strides, padding: padding, dilation: dilation, groups: groups)
  if use_bias {
    param bias: f32[filters] = bias_initializer
    y = y + regularize(bias, bias_regularizer)
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
                    kernel_initializer = glorot_uniform, bias_initializer = zeros,
                    kernel_regularizer: list = [], bias_regularizer: list = []) {
  param kernel: f32[pair(kernel, 0), pair(kernel, 1), filters, cin] = kernel_initializer
  kernel = regularize(kernel, kernel_regularizer)
  y = prim.conv2d_transpose(x, kernel, strides: strides, padding: padding, dilation: dilation)
  if use_bias {
    param bias: f32[filters] = bias_initializer
    y = y + regularize(bias, bias_regularizer)
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

# logits f32[b, c] with labels i32[b], or per token: logits f32[b, t, c] with
# labels i32[b, t] (the per-example loss is the mean over its t tokens)
fn sparse_softmax_cross_entropy(logits: f32, labels: i32) {
  return prim.reduce_mean(example_xent(logits, labels), axes: 1)
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
# (an all-reduce in the forward pass, Keras' synchronized=True, PyTorch's
# SyncBatchNorm); without it each replica uses its own batch and the moving
# statistics are averaged over replicas when saved and before eval
# (docs/language.md).
fn batch_norm(x: f32, momentum: float = 0.99, epsilon: float = 0.001, sync: int = false) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  state moving_mean: f32[c] = zeros
  state moving_variance: f32[c] = ones
  # issue 14: per-channel statistics in one pass over x each (the variance
  # two-pass, around the mean), the normalization in one more (docs/fusion.md)
  batch_mean = prim.channel_mean(x)
  if sync {
    batch_mean = prim.all_reduce(batch_mean, mean: 1)
  }
  batch_variance = prim.channel_var(x, batch_mean)
  if sync {
    batch_variance = prim.all_reduce(batch_variance, mean: 1)
  }
  mean = prim.in_training(batch_mean, moving_mean)
  variance = prim.in_training(batch_variance, moving_variance)
  new_mean = prim.assign(moving_mean, moving_mean * momentum + batch_mean * (1.0 - momentum))
  new_variance = prim.assign(moving_variance, moving_variance * momentum + batch_variance * (1.0 - momentum))
  return prim.scale_shift(x, mean, gamma / prim.sqrt(variance + epsilon), beta)
}

# ---- shape ops, reductions, normalization (issue 12) ----

# log(softmax(x)) along an axis, computed as x - logsumexp(x)
fn log_softmax(x: f32, axis: int = -1) {
  return prim.log_softmax(x, axis: axis)
}

# the axes argument of a reduction: an int or a list of ints
fn axes_list(axis) {
  if typeof(axis) == "list" {
    return axis
  }
  return [axis]
}

# largest / smallest element over the axes (default all); the gradient goes to
# the extreme element, split equally between ties
fn reduce_max(x: f32, axis = range(rank(x)), keepdims: int = false) {
  return prim.reduce_max(x, axes: axes_list(axis), keepdims: keepdims)
}

fn reduce_min(x: f32, axis = range(rank(x)), keepdims: int = false) {
  return prim.reduce_min(x, axes: axes_list(axis), keepdims: keepdims)
}

# log(sum(exp(x))) over the axes, shifted by the maximum
fn logsumexp(x: f32, axis = -1, keepdims: int = false) {
  axes = axes_list(axis)
  m = prim.reduce_max(x, axes: axes, keepdims: true)
  s = prim.reduce_sum(prim.exp(x - m), axes: axes, keepdims: keepdims)
  return prim.log(s) + prim.reduce_sum(m, axes: axes, keepdims: keepdims)
}

# the tensors of a list joined along an axis; all other dimensions equal
fn concat(xs, axis: int = -1) {
  return prim.concat(xs, axis: axis)
}

# n equal parts along an axis, as a list: a, b = split(x, 2)
fn split(x: f32, n: int, axis: int = -1) {
  r = rank(x)
  a = axis
  if a < 0 {
    a = a + r
  }
  if a < 0 or a >= r {
    return error("axis", axis, "of split is out of range for", x)
  }
  d = dim(x, a)
  if n < 1 or d / n * n != d {
    return error("split cannot cut axis", axis, "of", x, "into", n, "equal parts")
  }
  parts = []
  for i in range(n) {
    begin = []
    size = []
    for j in range(r) {
      if j == a {
        begin = begin + [i * (d / n)]
        size = size + [d / n]
      } else {
        begin = begin + [0]
        size = size + [dim(x, j)]
      }
    }
    parts = parts + [prim.slice(x, size, begin: begin)]
  }
  return parts
}

# axes reordered: output axis i is input axis perm[i] (the batch axis included)
fn transpose(x: f32, perm) {
  return prim.transpose(x, perm: perm)
}

# Keras Reshape: the batch axis kept, the rest to shape (one -1 inferred)
fn reshape(x: f32, shape) {
  return prim.reshape(x, [dim(x, 0)] + shape)
}

# x[begin : begin + size] on every axis (the batch axis included); a size of
# -1 runs to the end of its axis
fn slice(x: f32, begin, size) {
  return prim.slice(x, size, begin: begin)
}

# zeros around NHWC images: padding n, [h, w] (both sides) or [[top, bottom], [left, right]]
fn zero_padding2d(x: f32[b, h, w, c], padding = 1) {
  p = padding
  if typeof(p) == "int" {
    p = [p, p]
  }
  if typeof(p[0]) == "int" {
    p = [[p[0], p[0]], [p[1], p[1]]]
  }
  out = [b, h + p[0][0] + p[0][1], w + p[1][0] + p[1][1], c]
  return prim.pad(x, out, before: [0, p[0][0], p[1][0], 0])
}

# nearest-neighbour upsampling of NHWC images by size (n or [h, w]): each
# pixel repeated; the gradient sums each block
fn upsampling2d(x: f32[b, h, w, c], size = 2) {
  s = size
  if typeof(s) == "int" {
    s = [s, s]
  }
  y = prim.broadcast_to(prim.reshape(x, [b, h, 1, w, 1, c]), [b, h, s[0], w, s[1], c])
  return prim.reshape(y, [b, h * s[0], w * s[1], c])
}

# mean / maximum over the image axes of NHWC: [b, c] ([b, 1, 1, c] with keepdims)
fn global_average_pool2d(x: f32[b, h, w, c], keepdims: int = false) {
  return prim.reduce_mean(x, axes: [1, 2], keepdims: keepdims)
}

fn global_max_pool2d(x: f32[b, h, w, c], keepdims: int = false) {
  return prim.reduce_max(x, axes: [1, 2], keepdims: keepdims)
}

# Keras LayerNormalization over the last axis: each example's features
# normalized by their own mean and (biased) variance, then scaled by gamma
# (ones) and shifted by beta (zeros); the same in training and inference
fn layer_norm(x: f32, epsilon: float = 0.001) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  # issue 14: (x - mean) / sqrt(variance + epsilon) in one kernel each way
  return prim.normalize(x, epsilon: epsilon) * gamma + beta
}

# ---- elementwise math and activations (Keras names and defaults) ----
# Usable as activation: of layers (the defaults apply) and as functions.

fn abs(x) {
  return prim.abs(x)
}

fn square(x) {
  return x * x
}

fn sqrt(x) {
  return prim.sqrt(x)
}

fn rsqrt(x) {
  return 1.0 / prim.sqrt(x)
}

fn pow(x, y) {
  return prim.pow(x, y)
}

fn erf(x) {
  return prim.erf(x)
}

# elementwise max / min, numpy broadcasting; a tie sends the gradient to x
fn maximum(x, y) {
  return prim.maximum(x, y)
}

fn minimum(x, y) {
  return prim.minimum(x, y)
}

# min(max(x, x_min), x_max)
fn clip(x, x_min, x_max) {
  return prim.minimum(prim.maximum(x, x_min), x_max)
}

# x > 0 ? x : negative_slope * x (keras.activations.leaky_relu; the LeakyReLU layer's default is 0.3)
fn leaky_relu(x: f32, negative_slope: float = 0.2) {
  return prim.leaky_relu(x, alpha: negative_slope)
}

# x > 0 ? x : alpha * (e^x - 1)
fn elu(x: f32, alpha: float = 1.0) {
  return prim.elu(x, alpha: alpha)
}

# scale * elu(x, alpha), scale 1.0507009873554805, alpha 1.6732632423543772
fn selu(x: f32) {
  return prim.selu(x)
}

# x * Phi(x) with the normal CDF by erf; approximate: the tanh formula
fn gelu(x: f32, approximate = false) {
  if approximate {
    return 0.5 * x * (1.0 + prim.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
  }
  return prim.gelu(x)
}

# x * sigmoid(x) (swish)
fn silu(x: f32) {
  return x * prim.sigmoid(x)
}

# log(1 + e^x), stable for large |x|
fn softplus(x: f32) {
  return prim.softplus(x)
}

# min(max(x, 0), 6)
fn relu6(x: f32) {
  return clip(x, 0.0, 6.0)
}

# relu6(x + 3) / 6 (Keras 3)
fn hard_sigmoid(x: f32) {
  return relu6(x + 3.0) / 6.0
}

# ---- more losses and metrics (Keras formulas): the batch mean of a per-example
# mean (or sum) over the last axis. Probabilities are clipped to [1e-7, 1 - 1e-7]
# (Keras' epsilon); from_logits: true takes logits, computed stably. ----

# -(t log p + (1 - t) log(1 - p)); from logits z: softplus(z) - z t
fn binary_crossentropy(predictions: f32[b, n], targets: f32[b, n], from_logits = false) {
  if from_logits {
    l = prim.softplus(predictions) - predictions * targets
  } else {
    p = clip(predictions, 1e-7, 1.0 - 1e-7)
    l = -(targets * prim.log(p) + (1.0 - targets) * prim.log(1.0 - p))
  }
  return prim.reduce_mean(prim.reduce_mean(l, axes: 2), axes: 1)
}

# -sum(t log p) over the classes, p normalized to sum 1; from logits z: -sum(t log_softmax(z));
# label_smoothing s: t (1 - s) + s / classes
fn categorical_crossentropy(predictions: f32[b, c], targets: f32[b, c], from_logits = false,
                            label_smoothing: float = 0.0) {
  t = targets
  if label_smoothing != 0 {
    t = targets * (1.0 - label_smoothing) + label_smoothing / c
  }
  if from_logits {
    logp = prim.log_softmax(predictions)
  } else {
    p = predictions / prim.reduce_sum(predictions, axes: 2, keepdims: 1)
    logp = prim.log(clip(p, 1e-7, 1.0 - 1e-7))
  }
  return prim.reduce_mean(-prim.reduce_sum(t * logp, axes: 2), axes: 1)
}

# mean |p - t| over the last axis (a loss and a metric)
fn mean_absolute_error(predictions: f32[b, n], targets: f32[b, n]) {
  return prim.reduce_mean(prim.reduce_mean(prim.abs(predictions - targets), axes: 2), axes: 1)
}

# e = p - t: e^2 / 2 where |e| <= delta, else delta (|e| - delta / 2); mean over the last axis
fn huber(predictions: f32[b, n], targets: f32[b, n], delta: float = 1.0) {
  e = predictions - targets
  a = prim.abs(e)
  l = where(prim.less_equal(a, delta), 0.5 * e * e, delta * a - 0.5 * delta * delta)
  return prim.reduce_mean(prim.reduce_mean(l, axes: 2), axes: 1)
}

# the fraction of the last axis where (p > threshold) equals t
fn binary_accuracy(predictions: f32[b, n], targets: f32[b, n], threshold: float = 0.5) {
  return prim.reduce_mean(prim.reduce_mean(prim.equal(targets, prim.greater(predictions, threshold)), axes: 2), axes: 1)
}

# 1 where the label's logit is among the k largest of its row (ties count as in, as TF's in_top_k)
fn sparse_top_k_categorical_accuracy(logits: f32[b, c], labels: i32[b], k: int = 5) {
  return prim.reduce_mean(prim.in_top_k(logits, labels, k: k), axes: 1)
}

# Keras Embedding: rows of the table embedding/embeddings f32[input_dim,
# output_dim] picked by the i32 ids x [...] -> [..., output_dim]. An id outside
# [0, input_dim) is a run-time error. Keras' default initializer is uniform in
# +-0.05; initializers here carry one parameter, so the default is
# random_normal(stddev: 0.05) (docs/language.md)
fn embedding(x: i32, input_dim: int, output_dim: int, embeddings_initializer = random_normal) {
  param embeddings: f32[input_dim, output_dim] = embeddings_initializer
  return prim.gather(embeddings, x)
}

# ---- sequences (issue 13) ----

# the per-example softmax cross-entropy f32[b] of sparse_softmax_cross_entropy:
# logits [b, c] with labels [b], or the mean over the tokens of logits
# [b, t, c] with labels [b, t] (through [b * t, c] for prim.sparse_xent)
fn example_xent(logits: f32, labels: i32) {
  if rank(logits) == 2 and rank(labels) == 1 and dim(labels, 0) == dim(logits, 0) {
    return prim.sparse_xent(logits, labels)
  }
  if rank(logits) == 3 and rank(labels) == 2 and dim(labels, 0) == dim(logits, 0) and dim(labels, 1) == dim(logits, 1) {
    b = dim(logits, 0)
    t = dim(logits, 1)
    per_token = prim.sparse_xent(prim.reshape(logits, b * t, dim(logits, 2)), prim.reshape(labels, b * t))
    return prim.reduce_mean(prim.reshape(per_token, b, t), axes: 2)
  }
  return error("the cross-entropy takes logits f32[b, c] with labels i32[b] or logits f32[b, t, c] with labels i32[b, t], got",
               logits, "and", labels)
}

# per example exp(mean over its tokens of the cross-entropy), then the batch
# mean (Keras-NLP's Perplexity is exp of the mean over all tokens of the batch)
fn perplexity(logits: f32, labels: i32) {
  return prim.reduce_mean(prim.exp(example_xent(logits, labels)), axes: 1)
}

# columns [k * n, (k + 1) * n) of m [rows, cols]: gate k of a recurrent layer
fn gate(m: f32[rows, cols], k: int, n: int) {
  return prim.slice(m, [rows, n], begin: [0, k * n])
}

# step s of xw [b, t, g] as [b, g]
fn time_step(xw: f32[b, t, g], s: int) {
  return prim.reshape(prim.slice(xw, [b, 1, g], begin: [0, s, 0]), b, g)
}

# the hidden states hs (a list of t [b, u]) as [b, t, u], or the last one
fn rnn_output(hs, return_sequences: int) {
  if not return_sequences {
    return hs[len(hs) - 1]
  }
  steps = []
  for h in hs {
    steps = steps + [prim.reshape(h, dim(h, 0), 1, dim(h, 1))]
  }
  return prim.concat(steps, axis: 1)
}

# Keras LSTM over x [b, t, f] from zero states, unrolled at compile time (t
# steps sharing the params): gates z = x_s kernel + h recurrent_kernel + bias
# in the order i, f, c, o; i, f, o = recurrent_activation, c~ = activation;
# c = f * c + i * c~, h = o * activation(c). Params lstm/kernel f32[f, 4 * units]
# (glorot_uniform), recurrent_kernel f32[units, 4 * units] (orthogonal), bias
# f32[4 * units] (unit_forget_bias: 1 on the forget gate, else 0). Output: the
# last h [b, units], or every h [b, t, units] with return_sequences
fn lstm(x: f32[b, t, f], units: int, return_sequences: int = false, activation: fn = tanh,
        recurrent_activation: fn = sigmoid, kernel_initializer = glorot_uniform,
        recurrent_initializer = orthogonal, bias_initializer = unit_forget_bias) {
  param kernel: f32[f, 4 * units] = kernel_initializer
  param recurrent_kernel: f32[units, 4 * units] = recurrent_initializer
  param bias: f32[4 * units] = bias_initializer
  xw = prim.reshape(prim.matmul(prim.reshape(x, b * t, f), kernel) + bias, b, t, 4 * units)
  h = prim.broadcast_to(0.0, b, units)
  c = h
  hs = []
  for s in range(t) {
    z = time_step(xw, s) + prim.matmul(h, recurrent_kernel)
    c = recurrent_activation(gate(z, 1, units)) * c + recurrent_activation(gate(z, 0, units)) * activation(gate(z, 2, units))
    h = recurrent_activation(gate(z, 3, units)) * activation(c)
    hs = hs + [h]
  }
  return rnn_output(hs, return_sequences)
}

# Keras 3 GRU (reset_after: true) over x [b, t, f] from a zero state, unrolled:
# gates in the order z, r, h; xz = x_s kernel + bias[0], hr = h recurrent_kernel
# + bias[1]; z, r = recurrent_activation(xz + hr) of their gates, h~ =
# activation(xz_h + r * hr_h), h = z * h + (1 - z) * h~. Params gru/kernel
# f32[f, 3 * units] (glorot_uniform), recurrent_kernel f32[units, 3 * units]
# (orthogonal), bias f32[2, 3 * units] (zeros: the input and the recurrent bias)
fn gru(x: f32[b, t, f], units: int, return_sequences: int = false, activation: fn = tanh,
       recurrent_activation: fn = sigmoid, kernel_initializer = glorot_uniform,
       recurrent_initializer = orthogonal, bias_initializer = zeros) {
  param kernel: f32[f, 3 * units] = kernel_initializer
  param recurrent_kernel: f32[units, 3 * units] = recurrent_initializer
  param bias: f32[2, 3 * units] = bias_initializer
  input_bias = prim.reshape(prim.slice(bias, [1, 3 * units], begin: [0, 0]), 3 * units)
  recurrent_bias = prim.reshape(prim.slice(bias, [1, 3 * units], begin: [1, 0]), 3 * units)
  xw = prim.reshape(prim.matmul(prim.reshape(x, b * t, f), kernel) + input_bias, b, t, 3 * units)
  h = prim.broadcast_to(0.0, b, units)
  hs = []
  for s in range(t) {
    xz = time_step(xw, s)
    hr = prim.matmul(h, recurrent_kernel) + recurrent_bias
    z = recurrent_activation(gate(xz, 0, units) + gate(hr, 0, units))
    r = recurrent_activation(gate(xz, 1, units) + gate(hr, 1, units))
    candidate = activation(gate(xz, 2, units) + r * gate(hr, 2, units))
    h = z * h + (1.0 - z) * candidate
    hs = hs + [h]
  }
  return rnn_output(hs, return_sequences)
}

# f32[t, t]: 1 on and below the diagonal, 0 above (a causal attention mask),
# from existing ops: t copies of the row r = [1, 0 x (t - 1), 1 x t] read in
# rows of 2t - 1 put r[(j - i) mod 2t] at [i, j], which is 1 exactly when j <= i
fn causal_mask(t: int) {
  if t < 1 {
    return error("causal_mask needs t >= 1, got", t)
  }
  if t == 1 {
    return prim.broadcast_to(1.0, 1, 1)
  }
  r = 1.0 - prim.pad(prim.broadcast_to(1.0, t - 1), [2 * t], before: [1])
  rows = prim.broadcast_to(prim.reshape(r, 1, 2 * t), t, 2 * t)
  flat = prim.slice(prim.reshape(rows, 2 * t * t), [t * (2 * t - 1)], begin: [0])
  return prim.slice(prim.reshape(flat, t, 2 * t - 1), [t, t], begin: [0, 0])
}

# ---- one_hot (issue 13) ----

# tf.one_hot(ids, depth) with its defaults: i32 ids [...] -> f32[..., depth],
# 1 at the id and 0 elsewhere (on_value 1, off_value 0); an id outside
# [0, depth) gives an all-zero row, as in TF (not an error, unlike embedding)
fn one_hot(ids: i32, depth: int) {
  return prim.one_hot(ids, depth: depth)
}

# ---- attention (issue 13): Keras MultiHeadAttention (self-attention) and a
# learned position embedding, on batched matmul, softmax, transpose and dropout ----

# 1 / sqrt(v) of a number v > 0, folded at compile time (Newton's iteration
# for sqrt from v + 1 > sqrt(v): decreasing, exact to double within 64 steps
# for any v < 2^60)
fn inverse_sqrt(v: float) {
  if v <= 0 {
    return error("inverse_sqrt needs a number > 0, got", v)
  }
  r = v + 1.0
  for i in range(64) {
    r = 0.5 * (r + v / r)
  }
  return 1.0 / r
}

# Keras EinsumDense "abc,cde->abde" of MultiHeadAttention's query, key and
# value: x [b, t, d] -> [b, t, heads, dim]; params kernel f32[d, heads, dim],
# bias f32[heads, dim] (Keras' shapes, so Keras' fans: fan_in d * heads,
# fan_out d * dim)
fn attention_projection(x: f32[b, t, d], heads: int, dim: int, use_bias: int,
                        kernel_initializer, bias_initializer) {
  param kernel: f32[d, heads, dim] = kernel_initializer
  y = prim.matmul(prim.reshape(x, b * t, d), prim.reshape(kernel, d, heads * dim))
  if use_bias {
    param bias: f32[heads, dim] = bias_initializer
    y = y + prim.reshape(bias, heads * dim)
  }
  return prim.reshape(y, b, t, heads, dim)
}

# Keras EinsumDense "abcd,cde->abe" of MultiHeadAttention's output: o [b, t,
# heads, dim] -> [b, t, units]; params kernel f32[heads, dim, units], bias f32[units]
fn attention_output(o: f32[b, t, heads, dim], units: int, use_bias: int,
                    kernel_initializer, bias_initializer) {
  param kernel: f32[heads, dim, units] = kernel_initializer
  y = prim.matmul(prim.reshape(o, b * t, heads * dim), prim.reshape(kernel, heads * dim, units))
  if use_bias {
    param bias: f32[units] = bias_initializer
    y = y + bias
  }
  return prim.reshape(y, b, t, units)
}

# Keras MultiHeadAttention as self-attention (query = key = value = x [b, t, d]):
# q, k, v = x W + bias per head ([b, heads, t, key_dim], v value_dim); scores
# = (q / sqrt(key_dim)) k^T [b, heads, t, t]; causal: Keras' masked softmax
# (scores + (1 - mask) * -1e9 above the diagonal) as prim.causal_softmax(q k^T,
# scale: 1 / sqrt(key_dim)), so position i attends to j <= i; p =
# dropout(softmax(scores)) (rate `dropout`, training only);
# y = (p v) W_o + bias_o [b, t, d]. Params multi_head_attention/query/kernel
# f32[d, heads, key_dim], query/bias f32[heads, key_dim], key/... the same,
# value/kernel f32[d, heads, value_dim], value/bias f32[heads, value_dim],
# attention_output/kernel f32[heads, value_dim, d], attention_output/bias f32[d]
fn multi_head_attention(x: f32[b, t, d], heads: int, key_dim: int, value_dim: int = key_dim,
                        causal: int = false, dropout: float = 0.0, use_bias: int = true,
                        kernel_initializer = glorot_uniform, bias_initializer = zeros) {
  if heads < 1 or key_dim < 1 or value_dim < 1 {
    return error("multi_head_attention needs heads, key_dim and value_dim >= 1, got", heads, key_dim, value_dim)
  }
  q = attention_projection(x, heads, key_dim, use_bias, kernel_initializer, bias_initializer, name: "query")
  k = attention_projection(x, heads, key_dim, use_bias, kernel_initializer, bias_initializer, name: "key")
  v = attention_projection(x, heads, value_dim, use_bias, kernel_initializer, bias_initializer, name: "value")
  q = prim.transpose(q, perm: [0, 2, 1, 3])
  k = prim.transpose(k, perm: [0, 2, 1, 3])
  v = prim.transpose(v, perm: [0, 2, 1, 3])
  if causal {
    # issue 14: the scale, the mask and the softmax as one kernel each way
    # (masked scores are neither written nor exp'd; their weights are 0);
    # q k^T and p v as causal matmuls, which skip the masked half (tri 0:
    # the scores' upper triangle is not computed; tri 1: p's is not read),
    # and so do their gradients
    p = prim.causal_softmax(prim.causal_matmul(q, k, trans_b: true), scale: inverse_sqrt(key_dim))
    if dropout > 0 {
      p = prim.dropout(p, rate: dropout, seed: -1)
    }
    o = prim.transpose(prim.causal_matmul(p, v, tri: 1), perm: [0, 2, 1, 3])   # [b, t, heads, value_dim]
  } else {
    p = prim.softmax(prim.matmul(q * inverse_sqrt(key_dim), k, trans_b: true), axis: -1)   # [b, heads, t, t]
    if dropout > 0 {
      p = prim.dropout(p, rate: dropout, seed: -1)
    }
    o = prim.transpose(prim.matmul(p, v), perm: [0, 2, 1, 3])        # [b, t, heads, value_dim]
  }
  return attention_output(o, d, use_bias, kernel_initializer, bias_initializer, name: "attention_output")
}

# a learned position embedding added to x [b, t, d]: x + the first t rows of
# positional_embedding/embeddings f32[max_len, d] (glorot_uniform, as
# keras_hub's PositionEmbedding, which returns the table's rows alone and
# leaves the sum to its caller)
fn positional_embedding(x: f32[b, t, d], max_len: int, initializer = glorot_uniform) {
  if t > max_len {
    return error("positional_embedding: the sequence length", t, "of", x, "exceeds max_len", max_len)
  }
  param embeddings: f32[max_len, d] = initializer
  e = embeddings
  if t < max_len {
    e = prim.slice(embeddings, [t, d], begin: [0, 0])
  }
  return x + e
}
