package rst

import (
	"math"
	"slices"
)

// MemoryModel estimates the GPU memory of one training replica when nobody
// measured it (Gavel and Pollux measured time, not memory):
//
//	memory = Context + Params × BytesPerParam + localBatch × Activation × c × a
//
// in GiB, with c = 1/2 under activation checkpointing and a = 1/2 under
// mixed precision (the factors of BuildFamily's interpolation). The static
// part holds the weights, their gradients and the optimizer's state (4 + 4
// bytes per parameter, plus 4 for SGD's momentum or 8 for Adam's two
// moments); the activations are those saved for the backward pass, which
// grow linearly with the local batch.
type MemoryModel struct {
	// Params is the number of parameters.
	Params float64
	// BytesPerParam is the static bytes per parameter: 8 for plain SGD, 12
	// for SGD with momentum, 16 for Adam.
	BytesPerParam float64
	// Activation is the MiB of saved activations per sample, in 32-bit
	// floats, without checkpointing.
	Activation float64
	// Context is the GiB every process pays whatever its model: the CUDA
	// context, cuDNN and cuBLAS workspaces and the caching allocator's
	// slack. Zero means DefaultContext.
	Context float64
	// Basis says where the numbers come from.
	Basis string
}

// DefaultContext is MemoryModel.Context's default, 0.75 GiB: a PyTorch
// process's CUDA context alone takes 0.3–0.5 GiB on the GPUs of the data
// sets, and the library workspaces and allocator slack take the rest.
const DefaultContext = 0.75

// Static returns the GiB of a replica that do not depend on the batch.
func (m MemoryModel) Static() float64 {
	c := m.Context
	if c == 0 {
		c = DefaultContext
	}
	return c + m.Params*m.BytesPerParam/(1<<30)
}

// Replica returns the modelled GiB of one replica at the given local batch
// size (a local batch of 0, for a job without a batch knob, counts as 1).
func (m MemoryModel) Replica(localBatch int, checkpointing, amp bool) float64 {
	act := m.Activation * float64(max(1, localBatch)) / 1024
	if checkpointing {
		act *= ckptActivation
	}
	if amp {
		act *= ampActivation
	}
	return m.Static() + act
}

// MaxLocalBatch returns the largest local batch whose replica fits in
// memory GiB, or 0 if none does.
func (m MemoryModel) MaxLocalBatch(memory float64, checkpointing, amp bool) int {
	per := m.Replica(1, checkpointing, amp) - m.Static()
	free := memory - m.Static()
	if free < per || per <= 0 {
		return 0
	}
	return int(math.Floor(free / per))
}

// Memory models of the jobs in the shipped data sets, keyed by the model
// name of GavelModels and PolluxModels. Parameter counts come from the
// architectures the data sets' code builds; activations are counts of the
// tensors saved for the backward pass (convolution inputs and batch-norm
// inputs per layer, attention maps and logits for sequence models), rounded
// up, except where a published maximum batch size gives a tighter figure.
// TestMemoryModelsFitTheMeasurements checks that every configuration either
// data set measured fits the memory of the GPU it was measured on.
var memoryModels = map[string]MemoryModel{
	// Gavel (github.com/stanford-futuredata/gavel, workloads/pytorch).
	"ResNet-18": {Params: 11.17e6, BytesPerParam: 12, Activation: 5,
		Basis: "kuangliu/pytorch-cifar ResNet18 on 32×32 CIFAR-10 images (11,173,962 parameters), SGD with momentum; ≈1.3M saved floats per image"},
	"ResNet-50": {Params: 25.56e6, BytesPerParam: 12, Activation: 75,
		Basis: "torchvision resnet50 on 224×224 ImageNet crops (25,557,032 parameters), SGD with momentum; ≈19.7M saved floats per image (two per conv–BN–ReLU unit)"},
	"Transformer": {Params: 52e6, BytesPerParam: 16, Activation: 18,
		Basis: "attention-is-all-you-need-pytorch defaults (d_model 512, 6+6 layers, 8 heads, d_inner 2048) on Multi30k (≈6k/9.5k-word vocabularies), Adam; ≈4.5M saved floats per ~30-token sentence"},
	"LM": {Params: 13.99e6, BytesPerParam: 8, Activation: 14,
		Basis: "Gavel's language_modeling/main.py defaults: 2-layer LSTM, 200 units, WikiText-2 vocabulary of 33,278 words, bptt 35, plain SGD; logits, log-softmax and their gradient for 35 tokens ≈ 3.5M floats per sequence"},
	"Recommendation": {Params: 46.8e6, BytesPerParam: 16, Activation: 0.8,
		Basis: "Gavel's recommendation/scripts/ml-20m/train.py: Recoder DynamicAutoencoder, one hidden layer of 200, item-based over ML-20M's ≈116,677 training users, Adam; a dense input row (0.45 MiB) and negative-sampled outputs per item"},
	"A3C": {Params: 0.59e6, BytesPerParam: 16, Activation: 64,
		Basis: "Gavel's rl/main.py: A3C on Pong (four 32-filter convolutions, an LSTM of 256), shared Adam; no batch size: one 20-step rollout's activations, rounded up"},
	"CycleGAN": {Params: 28.3e6, BytesPerParam: 16, Activation: 2048,
		Basis: "Gavel's cyclegan.py: two ResNet-9-block generators (11.4M parameters each) and two PatchGAN discriminators (2.8M each) on 256×256 monet2photo images, Adam; six generator and four discriminator passes per step (≈1.7 GiB), rounded up"},
	// Pollux (github.com/petuum/adaptdl, osdi21-artifact branch, benchmark/models).
	"cifar10": {Params: 11.17e6, BytesPerParam: 12, Activation: 5,
		Basis: "benchmark/models/cifar10: ResNet-18 on CIFAR-10, as Gavel's ResNet-18"},
	"imagenet": {Params: 25.56e6, BytesPerParam: 12, Activation: 75,
		Basis: "benchmark/models/imagenet: torchvision resnet50, as Gavel's ResNet-50; trained under apex AMP, so its families use AMP (half the activations)"},
	"bert": {Params: 110e6, BytesPerParam: 16, Activation: 780,
		Basis: "benchmark/models/bert: BERT-Base fine-tuned on SQuAD (sequence length 384), AdamW; google-research/bert's README fits at most 12 such sequences on a 12 GB GPU, ≈0.76 GiB each"},
	"deepspeech2": {Params: 41.2e6, BytesPerParam: 12, Activation: 60,
		Basis: "benchmark/models/deepspeech2: DeepSpeech2 with 5 bidirectional GRU layers of 800 on CMU-ARCTIC (≈3 s utterances, ≈150 steps after the strided convolutions), SGD with momentum"},
	"ncf": {Params: 1.6e6, BytesPerParam: 16, Activation: 0.02,
		Basis: "benchmark/models/ncf: NeuMF on MovieLens-1M (6,040 users, 3,706 items, 32-wide GMF and 128-wide MLP embeddings), Adam; a few KiB of activations per (user, item) pair"},
	"yolov3": {Params: 61.6e6, BytesPerParam: 12, Activation: 500,
		Basis: "benchmark/models/yolov3: YOLOv3 (Darknet-53) on PASCAL VOC at 416×416, SGD with momentum; ≈125M saved floats per image"},
}

// MemoryModelOf returns the memory model of a job in the shipped data sets
// (a name of GavelModels or PolluxModels), and whether there is one.
func MemoryModelOf(model string) (MemoryModel, bool) {
	m, ok := memoryModels[model]
	return m, ok
}

// MemoryModels returns the names that have a memory model, sorted.
func MemoryModels() []string {
	out := make([]string, 0, len(memoryModels))
	for k := range memoryModels {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
