/* The experiment schema as key tables (seed format plus dtrun's extensions): the rows of every
 * section, the experiment table completed from the plug-in registry, the names behind the enum
 * keys, and the walk over every documented key. Reading (load.c), emitting (emit.c) and
 * configs/README.md all come from these rows. */
#include <string.h>

#include "config_impl.h"
#include "dt/data.h"
#include "dt/local_opt.h"
#include "dt/schedule.h"

#define INF 1e308
#define OFF(field) offsetof(dt_experiment_config, field)

static const char *const graph_types[] = {"wheel", "cycle", "complete", "star", "path", "random", "grid",
                                          "torus", "regular", "geometric", "exponential", "file", NULL};
static const char *const graph_type_aliases[] = {"ring", "cycle", "erdos_renyi", "random", NULL};
static const char *const mixing_names[] = {"metropolis", "uniform", NULL};
static const char *const split_names[] = {"random", "hetero", "dirichlet", NULL};
static const char *const backend_names[] = {"cpu", "cuda", "auto", NULL};
const char *const config_loss_names[] = {"NLL", NULL};
static const char *const loss_aliases[] = {"nll", "NLL", NULL};
#define LAYER_NAME(upper, lower) #lower,
const char *const config_layer_names[] = {DT_LAYER_CONFIG_LIST(LAYER_NAME) NULL};
#undef LAYER_NAME
const char *const config_metric_names[] = {"forward_pass_count", "validation_loss", "consensus_error",
                                           "top1_accuracy", "current_epoch", "consensus_matrix"};

const char *dt_backend_kind_name(int kind) { return kind >= 0 && kind <= DT_BACKEND_AUTO ? backend_names[kind] : "unknown"; }

const char *dt_metric_name(int bit) { return bit >= 0 && bit < DT_METRIC_COUNT_ ? config_metric_names[bit] : "unknown"; }

static const dt_key graph_keys[] = {
    {.name = "num_nodes", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, num_nodes), .def = "5", .min = 1, .max = 4096,
     .help = "number of graph nodes (agents)"},
    {.name = "type", .type = DT_KEY_ENUM, .offset = offsetof(dt_graph_config, type), .def = "cycle", .values = graph_types,
     .value_aliases = graph_type_aliases, .help = "topology; ring = cycle, erdos_renyi = random"},
    {.name = "p", .applies = "type=random,fiedler=0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, p), .def = "0.3", .min = 0, .max = 1, .flags = DT_KEY_MIN_OPEN,
     .help = "random: edge probability"},
    {.name = "gen_attempts", .applies = "type=random|regular|geometric", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, gen_attempts), .def = "100", .min = 1, .max = 1e6,
     .help = "random, regular, geometric: draws until a connected graph"},
    {.name = "rows", .applies = "type=grid|torus", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, rows), .def = "0", .min = 0, .max = 4096,
     .help = "grid, torus: rows (0 = most square factorisation of num_nodes)"},
    {.name = "cols", .applies = "type=grid|torus", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, cols), .def = "0", .min = 0, .max = 4096,
     .help = "grid, torus: columns (0 = num_nodes / rows)"},
    {.name = "degree", .applies = "type=regular", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, degree), .def = "3", .min = 1, .max = 4095,
     .help = "regular: degree k"},
    {.name = "radius", .applies = "type=geometric,fiedler=0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, radius), .def = "0.5", .min = 0, .max = 2,
     .flags = DT_KEY_MIN_OPEN,
     .help = "geometric: connection radius in the unit square"},
    {.name = "fiedler", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, fiedler), .def = "0", .min = 0, .max = 4096,
     .help = "random, geometric: a target Fiedler value (algebraic connectivity); p or the radius is bisected to reach it, "
             "and the p or radius keys are not used (0: off)"},
    {.name = "fiedler_tolerance", .applies = "fiedler>0", .type = DT_KEY_FLOAT, .offset = offsetof(dt_graph_config, fiedler_tolerance), .def = "0.01",
     .min = 0, .max = 4096, .flags = DT_KEY_MIN_OPEN,
     .help = "with fiedler: accepted distance from the target; draws are redrawn (gen_attempts) until one is this close"},
    {.name = "edge_file", .applies = "type=file", .type = DT_KEY_STRING, .offset = offsetof(dt_graph_config, edge_file), .size = DT_PATH_MAX, .def = "",
     .help = "file: path of an edge list, one 'u v' per line (relative to the config file)"},
    {.name = "mixing", .applies = "directed=false", .type = DT_KEY_ENUM, .offset = offsetof(dt_graph_config, mixing), .def = "metropolis", .values = mixing_names,
     .help = "mixing weights: metropolis (1/(1+max(deg_i,deg_j))) or uniform (1/(1+max degree))"},
    {.name = "schedule", .type = DT_KEY_ENUM, .offset = offsetof(dt_graph_config, schedule), .def = "static", .values = dt_schedule_names,
     .help = "time-varying graphs: static, one_peer_exponential (type exponential), random_matching (of the graph's edges) or "
             "resample (a new random/regular/geometric graph every resample_every rounds)"},
    {.name = "directed", .type = DT_KEY_BOOL, .offset = offsetof(dt_graph_config, directed), .def = "false", .flags = DT_KEY_EMIT_IF_SET,
     .help = "a directed graph (type cycle, exponential, random or file): messages go one way along each arc, with push weights "
             "1/(1 + out-degree); for push-sum algorithms (sgp)"},
    {.name = "resample_every", .applies = "schedule=resample", .type = DT_KEY_INT, .offset = offsetof(dt_graph_config, resample_every), .def = "10", .min = 1, .max = 1e9,
     .help = "schedule resample: rounds between new graphs"},
    {0},
};

static const char *const model_name_excludes[] = {"layers", NULL};

static const char *const network_units[] = {"samples", "flops", NULL};
#define NET(f) offsetof(dt_network_spec, f)
static const dt_key network_keys[] = {
    {.name = "speed", .type = DT_KEY_FLOAT, .offset = NET(speed), .def = "0", .min = 0, .max = 1e30,
     .help = "a node's speed in samples (or FLOPs, see unit) per simulated second; > 0 turns the simulated clock on (0: off)"},
    {.name = "unit", .applies = "speed>0", .type = DT_KEY_ENUM, .offset = NET(unit), .def = "samples", .values = network_units,
     .help = "what speed counts: samples, or flops (a step costs 3 x the model's forward FLOPs per sample)"},
    {.name = "speed_spread", .applies = "speed>0", .type = DT_KEY_FLOAT, .offset = NET(speed_spread), .def = "0", .min = 0, .max = 10,
     .help = "sigma of the lognormal spread of the nodes' speeds around speed (0: all equal)"},
    {.name = "stragglers", .applies = "speed>0", .type = DT_KEY_FLOAT, .offset = NET(stragglers), .def = "0", .min = 0, .max = 1,
     .help = "share of the nodes that are stragglers (round(share x N) nodes, drawn from the seed)"},
    {.name = "slowdown", .applies = "speed>0,stragglers>0", .type = DT_KEY_FLOAT, .offset = NET(slowdown), .def = "10", .min = 1, .max = 1e9,
     .help = "how many times slower a straggler is"},
    {.name = "jitter", .applies = "speed>0", .type = DT_KEY_FLOAT, .offset = NET(jitter), .def = "0", .min = 0, .max = 10,
     .help = "sigma of a lognormal factor drawn for every step's cost (0: none)"},
    {.name = "latency", .applies = "speed>0", .type = DT_KEY_FLOAT, .offset = NET(latency), .def = "0.0001", .min = 0, .max = 1e6,
     .help = "seconds a message takes before its first byte arrives"},
    {.name = "bandwidth", .applies = "speed>0", .type = DT_KEY_FLOAT, .offset = NET(bandwidth), .def = "1.25e9", .min = 0, .max = 1e30,
     .flags = DT_KEY_MIN_OPEN, .help = "bytes per second of a link (1.25e9: 10 Gbit/s)"},
    {.name = "link_spread", .applies = "speed>0", .type = DT_KEY_FLOAT, .offset = NET(link_spread), .def = "0", .min = 0, .max = 10,
     .help = "sigma of lognormal factors drawn per link on its latency and bandwidth (0: every link the same)"},
    {.name = "nodes_per_host", .applies = "speed>0", .type = DT_KEY_INT, .offset = NET(nodes_per_host), .def = "0", .min = 0, .max = 1 << 20,
     .help = "> 0: nodes sit on hosts in blocks of this many (0-based ids), and links between hosts use cross_latency and "
             "cross_bandwidth"},
    {.name = "cross_latency", .applies = "speed>0,nodes_per_host>0", .type = DT_KEY_FLOAT, .offset = NET(cross_latency), .def = "0.001", .min = 0, .max = 1e6,
     .help = "with nodes_per_host: latency of a link between hosts"},
    {.name = "cross_bandwidth", .applies = "speed>0,nodes_per_host>0", .type = DT_KEY_FLOAT, .offset = NET(cross_bandwidth), .def = "1.25e8", .min = 0, .max = 1e30,
     .flags = DT_KEY_MIN_OPEN, .help = "with nodes_per_host: bytes per second of a link between hosts (1.25e8: 1 Gbit/s)"},
    {.name = "loss", .type = DT_KEY_FLOAT, .offset = NET(loss), .def = "0", .min = 0, .max = 0.99,
     .help = "probability that a message is lost (a fault; works without speed); what each algorithm does then: its README"},
    {.name = "loss_burst", .applies = "loss>0", .type = DT_KEY_FLOAT, .offset = NET(loss_burst), .def = "1", .min = 1, .max = 1e9,
     .help = "mean length of a run of lost messages on a link: 1 loses messages independently, > 1 in bursts "
             "(Gilbert-Elliott) at the same long-run rate"},
    {.name = "link_up_rounds", .type = DT_KEY_FLOAT, .offset = NET(link_up_rounds), .def = "0", .min = 0, .max = 1e12,
     .help = "mean rounds a link works between failures (geometric, drawn per link); 0: links never fail"},
    {.name = "link_down_rounds", .applies = "link_up_rounds>0", .type = DT_KEY_FLOAT, .offset = NET(link_down_rounds), .def = "5", .min = 1, .max = 1e12,
     .help = "mean rounds a failed link stays down"},
    {.name = "node_up_rounds", .type = DT_KEY_FLOAT, .offset = NET(node_up_rounds), .def = "0", .min = 0, .max = 1e12,
     .help = "mean rounds a node stays online between absences (geometric, drawn per node); 0: nodes never leave"},
    {.name = "node_down_rounds", .applies = "node_up_rounds>0", .type = DT_KEY_FLOAT, .offset = NET(node_down_rounds), .def = "5", .min = 1, .max = 1e12,
     .help = "mean rounds an absent node stays offline (it keeps its state, neither computes nor communicates)"},
    {0},
};
#undef NET

static const dt_key augment_keys[] = {
    {.name = "crop_padding", .applies = "^dataset!=synthetic", .type = DT_KEY_INT, .offset = offsetof(dt_augment_config, crop_padding), .def = "0", .min = 0, .max = 64,
     .help = "random crop of the image zero-padded by this many pixels on every side (torchvision's RandomCrop(size, "
             "padding)); 0: none"},
    {.name = "flip", .applies = "^dataset!=synthetic", .type = DT_KEY_BOOL, .offset = offsetof(dt_augment_config, flip), .def = "false", .help = "random horizontal flip (p = 0.5)"},
    {0},
};

static const dt_key normalize_keys[] = {
    {.name = "mean", .applies = "^dataset!=synthetic", .type = DT_KEY_FLOATS, .offset = offsetof(dt_normalize_config, mean), .min = -1e6, .max = 1e6,
     .size = DT_MAX_CHANNELS, .help = "per-channel mean of pixel values scaled to [0, 1], one per channel"},
    {.name = "std", .applies = "^dataset!=synthetic", .type = DT_KEY_FLOATS, .offset = offsetof(dt_normalize_config, std), .min = 0, .max = 1e6,
     .flags = DT_KEY_MIN_OPEN, .size = DT_MAX_CHANNELS, .help = "per-channel standard deviation, one per channel (> 0)"},
    {0},
};

const dt_key config_model_keys[] = {
    {.name = "num_filters", .applies = "name=default", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, num_filters), .def = "3", .min = 1, .max = 4096,
     .help = "seed CNN: convolution filters"},
    {.name = "kernel_size", .applies = "name=default", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, kernel_size), .def = "5", .min = 1, .max = 27,
     .help = "seed CNN: convolution kernel size"},
    {.name = "linear_width", .applies = "name=default|mlp", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, linear_width), .def = "64", .min = 1, .max = 1 << 20,
     .help = "seed CNN: hidden linear width"},
    {.name = "layers", .type = DT_KEY_SPECIAL,
     .help = "list of layers replacing the seed CNN: {type: conv2d, out_channels: 16, ...}; the types and their keys follow"},
    {.name = "name", .type = DT_KEY_ENUM, .offset = offsetof(dt_model_config, name), .def = "default", .values = dt_model_names,
     .flags = DT_KEY_EMIT_IF_SET, .excludes = model_name_excludes,
     .help = "a model by name on the data's input shape: resnet20, vgg11 (CIFAR variant), lenet5, mlp (hidden width "
             "linear_width); default: the problem's own (the seed CNN for mnist, lenet5 for cifar)"},
    {.name = "norm", .applies = "name=resnet20|vgg11", .type = DT_KEY_ENUM, .offset = offsetof(dt_model_config, norm), .def = "batch", .values = dt_model_norms,
     .flags = DT_KEY_EMIT_IF_SET, .help = "resnet20, vgg11: the normalisation after each convolution: batch, group or none"},
    {.name = "groups", .applies = "name=resnet20|vgg11,norm=group", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, groups), .def = "2", .min = 1, .max = 4096,
     .flags = DT_KEY_EMIT_IF_SET, .help = "norm group: channel groups of each group norm"},
    {.name = "init_file", .type = DT_KEY_STRING, .offset = offsetof(dt_model_config, init_file), .size = DT_PATH_MAX, .def = "",
     .flags = DT_KEY_EMIT_IF_SET,
     .help = "initial weights from a file instead of the seed's draw (relative to the config file): a .npz of named tensors "
             "(a PyTorch state_dict saved with numpy.savez) or a models file of save_models (.npy with its .tsv); every "
             "tensor of the model, by its manifest name and shape, and nothing else"},
    {.name = "init_row", .type = DT_KEY_INT, .offset = offsetof(dt_model_config, init_row), .def = "0", .min = 0, .max = 1000000,
     .flags = DT_KEY_EMIT_IF_SET, .help = "init_file a models file (.npy): the row (node) whose model every node starts from"},
    {0},
};

static const dt_key solo_keys[] = {
    {.name = "train_solo", .type = DT_KEY_BOOL, .offset = offsetof(dt_solo_config, train_solo), .def = "false",
     .help = "train every node alone on its own data first (the no-communication baseline)"},
    {.name = "optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_solo_config, optimizer), .def = "adam", .values = dt_local_opt_names,
     .help = "local optimizer"},
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_solo_config, lr), .def = "0.005", .min = 0, .max = INF, .help = "learning rate"},
    {.name = "epochs", .type = DT_KEY_INT, .offset = offsetof(dt_solo_config, epochs), .def = "1", .min = 1, .max = 1e6,
     .help = "passes over the node's data"},
    {.name = "train_batch_size", .type = DT_KEY_INT, .offset = offsetof(dt_solo_config, train_batch_size), .def = "64", .min = 1, .max = 65536,
     .help = "training minibatch size"},
    {.name = "val_batch_size", .type = DT_KEY_INT, .offset = offsetof(dt_solo_config, val_batch_size), .def = "128", .min = 1, .max = 65536,
     .help = "evaluation batch size"},
    {.name = "verbose", .type = DT_KEY_BOOL, .offset = offsetof(dt_solo_config, verbose), .def = "true", .help = "print each node's result"},
    {0},
};

static const dt_key split_keys[] = {
    {.name = "alpha", .applies = "^data_split_type=dirichlet", .type = DT_KEY_FLOAT, .offset = OFF(dirichlet_alpha), .def = "0.5", .min = 1e-6, .max = 1e6,
     .help = "dirichlet: concentration; small = each node sees few classes"},
    {.name = "min_per_node", .applies = "^data_split_type=dirichlet", .type = DT_KEY_INT, .offset = OFF(min_per_node), .def = "10", .min = 1, .max = 1 << 30,
     .help = "dirichlet: redraw until every node holds at least this many samples"},
    {0},
};

/* where the problem plug-ins' sections go among the experiment rows (config_experiment_table_make) */
#define PROBLEM_SECTIONS "(problem sections)"
static const dt_key experiment_keys[] = {
    {.name = "name", .type = DT_KEY_STRING, .offset = OFF(name), .size = DT_NAME_MAX, .def = "experiment",
     .help = "experiment name; part of the output folder name"},
    {.name = "data_dir", .applies = "dataset!=synthetic", .type = DT_KEY_STRING, .offset = OFF(data_dir), .size = DT_PATH_MAX, .def = "",
     .help = "folder with the dataset's files (IDX, CIFAR binary), or the folder a torchvision root or the official archive unpacks into (relative to the config file); empty = data/<dataset> of the working directory"},
    {.name = "output_metadir", .applies = "writeout=true", .type = DT_KEY_STRING, .offset = OFF(output_metadir), .size = DT_PATH_MAX, .def = "outputs",
     .help = "where run folders are created (relative to the working directory)"},
    {.name = "writeout", .type = DT_KEY_BOOL, .offset = OFF(writeout), .def = "true", .help = "write result files (false: write nothing)"},
    {.name = "use_cuda", .type = DT_KEY_BOOL, .offset = OFF(use_cuda), .def = "false",
     .help = "seed key: true with backend cpu only warns that the run stays on the CPU; choose the device with backend"},
    {.name = "backend", .type = DT_KEY_ENUM, .offset = OFF(backend), .def = "cpu", .values = backend_names,
     .help = "compute backend: cpu, cuda, or auto (the first backend of this build that can run here, else cpu)"},
    {.name = "tf32", .type = DT_KEY_BOOL, .offset = OFF(tf32), .def = "false", .flags = DT_KEY_EMIT_IF_SET,
     .help = "cuda backend: matrix products on tensor cores with TF32 inputs (PyTorch's allow_tf32), faster for wide layers "
             "(1.3x on the larger CNN of tests/bench/gpu.sh); results then agree with float32 to about 1e-3 instead of float "
             "rounding (still identical for every P and re-run); the cpu backend always computes in float32"},
    /* .values: every problem plug-in's dataset names (experiment_table) */
    {.name = "dataset", .type = DT_KEY_ENUM, .offset = OFF(dataset), .def = "mnist",
     .help = "the data, and so the problem plug-in: mnist, fashion_mnist (problem mnist), synthetic (problem logreg)"},
    {.name = "data_split_type", .type = DT_KEY_ENUM, .offset = OFF(data_split_type), .def = "random", .values = split_names,
     .help = "how training data is split over nodes: random, hetero (by class), dirichlet"},
    {.name = "split", .type = DT_KEY_SECTION, .offset = 0, .sub = split_keys, .help = "split parameters"},
    {.name = "loss", .type = DT_KEY_ENUM, .offset = OFF(loss), .def = "NLL", .values = config_loss_names, .value_aliases = loss_aliases,
     .help = "loss: NLL of log-softmax outputs"},
    {.name = "seed", .type = DT_KEY_SEED, .offset = OFF(seed), .def = "0",
     .help = "seed of every random choice (graph, split, weights, minibatches, gossip)"},
    {.name = "batch_order", .type = DT_KEY_STRING, .offset = OFF(batch_order), .size = DT_PATH_MAX, .def = "", .flags = DT_KEY_EMIT_IF_SET,
     .help = "for studies: every node's minibatches from a .npz file instead of the seed's draws (relative to the config "
             "file): node_<i> an integer array of steps x batch training-sample indices, -1 after a short step's; every "
             "problem starts at step 0, and a run that needs more steps than the file holds stops with an error"},
    {.name = "save_models", .applies = "writeout=true", .type = DT_KEY_BOOL, .offset = OFF(save_models), .def = "false",
     .help = "write each problem's final models as <problem_name>_models.npy (N rows: parameters, then buffers; float32) "
             "with the manifest <problem_name>_models.tsv"},
    {.name = "tensorboard", .applies = "writeout=true", .type = DT_KEY_BOOL, .offset = OFF(tensorboard), .def = "false", .flags = DT_KEY_EMIT_IF_SET,
     .help = "stream every evaluation to TensorBoard event files, one folder per problem under <run>/tensorboard/ "
             "(tensorboard --logdir <run>/tensorboard; a sweep's points under <sweep>/tensorboard/, named by their swept values)"},
    {.name = "tensorboard_train_loss_every", .applies = "tensorboard=true", .type = DT_KEY_INT, .offset = OFF(tensorboard_train_loss_every),
     .def = "1", .min = 0, .max = 1000000000, .flags = DT_KEY_EMIT_IF_SET,
     .help = "with tensorboard: every this many rounds, train_loss_recent/mean, /min and /max: each node's mean minibatch "
             "loss over those rounds, between evaluations too (0: only train_loss at evaluations)"},
    {.name = "augment", .type = DT_KEY_SECTION, .offset = OFF(augment), .sub = augment_keys, .flags = DT_KEY_EMIT_IF_SET,
     .help = "training-image augmentation, drawn per node and sample from the node's own stream"},
    {.name = "network", .type = DT_KEY_SECTION, .offset = OFF(network), .sub = network_keys, .flags = DT_KEY_EMIT_IF_SET,
     .help = "the simulated clock: node speeds and link latencies and bandwidths; every evaluation records sim_time (off "
             "while speed is 0)"},
    {.name = "normalize", .type = DT_KEY_SECTION, .offset = OFF(normalize), .sub = normalize_keys, .flags = DT_KEY_EMIT_IF_SET,
     .help = "images are fed as (pixel/255 - mean[c]) / std[c]; both lists empty (default): the dataset's customary statistics "
             "(MNIST 0.1307/0.3081, Fashion-MNIST 0.2860/0.3530, CIFAR-10 and CIFAR-100 their training sets' per-channel ones)"},
    {.name = "checkpoint_every", .applies = "writeout=true", .type = DT_KEY_INT, .offset = OFF(checkpoint_every), .def = "0", .min = 0, .max = 1e9,
     .help = "checkpoint every node's state every K rounds (0: by time only, see checkpoint_minutes); dtrun resume continues from it"},
    {.name = "checkpoint_minutes", .applies = "writeout=true", .type = DT_KEY_FLOAT, .offset = OFF(checkpoint_minutes), .def = "5", .min = 0, .max = 1e6,
     .help = "also checkpoint when this many minutes passed since the last one (0: off); a checkpoint never changes results"},
    /* here: one section per problem plug-in with keys (experiment_table) */
    {.name = PROBLEM_SECTIONS, .type = DT_KEY_SPECIAL},
    {.name = "graph", .type = DT_KEY_SECTION, .offset = OFF(graph), .sub = graph_keys, .help = "communication graph"},
    {.name = "model", .type = DT_KEY_SECTION, .offset = OFF(model), .sub = config_model_keys, .help = "model"},
    {.name = "individual_training", .type = DT_KEY_SECTION, .offset = OFF(individual_training), .sub = solo_keys,
     .help = "the solo baseline run before the problems"},
    {0},
};

dt_status config_experiment_table_make(const dt_registry *reg, experiment_table *t) {
  memset(t, 0, sizeof *t);
  int nd = 0, nr = 0;
  for (int i = 0; experiment_keys[i].name != NULL; i++) {
    const dt_key *k = &experiment_keys[i];
    if (strcmp(k->name, PROBLEM_SECTIONS) != 0) {
      DT_ASSERT(nr + 1 < (int)(sizeof t->rows / sizeof t->rows[0]));
      t->rows[nr++] = *k;
      continue;
    }
    for (int p = 0; reg->problems[p] != NULL; p++) {
      const dt_problem_plugin *pp = reg->problems[p];
      DT_CHECK(p < DT_MAX_PROBLEM_PLUGINS && pp->plugin.opts_size <= DT_PROBLEM_OPTS_MAX, DT_ERR_INTERNAL,
               "problem plug-in %s: more than %d plug-ins or options over %d bytes", pp->plugin.name, DT_MAX_PROBLEM_PLUGINS,
               DT_PROBLEM_OPTS_MAX);
      if (pp->section == NULL) continue;
      DT_ASSERT(nr + 1 < (int)(sizeof t->rows / sizeof t->rows[0]));
      t->rows[nr++] = (dt_key){.name = pp->section, .type = DT_KEY_SECTION, .sub = pp->plugin.keys, .help = pp->plugin.summary,
                               .flags = DT_KEY_PROBLEM_SECTION, .offset = offsetof(dt_experiment_config, problem_opts) + (size_t)p * DT_PROBLEM_OPTS_MAX};
    }
  }
  for (int p = 0; reg->problems[p] != NULL; p++)
    for (int d = 0; reg->problems[p]->datasets[d] != NULL; d++) {
      DT_CHECK(nd < CONFIG_MAX_DATASETS, DT_ERR_INTERNAL, "more than %d dataset names registered", CONFIG_MAX_DATASETS);
      t->dataset_problem[nd] = p;
      t->datasets[nd++] = reg->problems[p]->datasets[d];
    }
  for (int i = 0; i < nr; i++)
    if (strcmp(t->rows[i].name, "dataset") == 0) t->rows[i].values = t->datasets;
  return DT_OK;
}

static const char *const eval_nodes_names[] = {"all", "mean", NULL};
static const dt_key eval_keys[] = {
    {.name = "nodes", .type = DT_KEY_ENUM, .offset = offsetof(dt_eval_config, nodes), .def = "all", .values = eval_nodes_names,
     .help = "all: every node's model; mean: the average model (parameters and buffers averaged over all nodes), "
             "evaluated once and written in every node's row"},
    {.name = "test_samples", .type = DT_KEY_INT, .offset = offsetof(dt_eval_config, test_samples), .def = "0", .min = 0, .max = 1e9,
     .help = "evaluate on this many test samples, a subset fixed by the seed (the same for every node, round and problem); "
             "0 = the whole test set"},
    {.name = "sample", .type = DT_KEY_INT, .offset = offsetof(dt_eval_config, sample), .def = "0", .min = 0, .max = 1e9,
     .help = "evaluate only this many nodes' models, drawn once from the seed (the same nodes for every round and problem; "
             "a smaller sample is part of a larger one); the others' loss and accuracy are left empty. 0 = every node"},
    {0},
};

static const char *const buffers_names[] = {"local", "mix", NULL};

#define POFF(field) offsetof(dt_problem_config, field)
const dt_key config_problem_keys[] = {
    {.name = "problem_name", .type = DT_KEY_STRING, .offset = POFF(problem_name), .size = DT_NAME_MAX,
     .help = "name used in result file names; default: the entry's key"},
    {.name = "train_batch_size", .type = DT_KEY_INT, .offset = POFF(train_batch_size), .def = "64", .applies = "full_batch=false", .min = 1, .max = 65536,
     .help = "training minibatch size per node"},
    {.name = "val_batch_size", .type = DT_KEY_INT, .offset = POFF(val_batch_size), .def = "128", .min = 1, .max = 65536,
     .help = "evaluation batch size"},
    {.name = "verbose_evals", .type = DT_KEY_BOOL, .offset = POFF(verbose_evals), .def = "true", .help = "print a line per evaluation"},
    {.name = "evaluate_frequency", .type = DT_KEY_INT, .offset = POFF(evaluate_frequency), .def = "20", .min = 1, .max = 1e9,
     .help = "evaluate every this many rounds (also at round 0 and after the last)"},
    {.name = "evaluation", .type = DT_KEY_SECTION, .offset = POFF(evaluation), .sub = eval_keys, .flags = DT_KEY_EMIT_IF_SET,
     .help = "what an evaluation measures (consensus error is always every node's)"},
    {.name = "buffers", .type = DT_KEY_ENUM, .offset = POFF(buffers), .def = "local", .values = buffers_names,
     .flags = DT_KEY_EMIT_IF_SET,
     .help = "model buffers (batch norm's running statistics): local (each node keeps its own) or mix (after every round, "
             "averaged with the round's mixing weights W, one more exchange, its bytes counted)"},
    {.name = "metrics_config", .type = DT_KEY_SPECIAL, .help = "seed spelling: {evaluate_frequency: N}"},
    {.name = "metrics", .type = DT_KEY_SPECIAL,
     .help = "list of metrics: forward_pass_count, validation_loss, consensus_error, top1_accuracy, current_epoch, consensus_matrix"},
    {.name = "full_batch", .type = DT_KEY_BOOL, .offset = POFF(full_batch), .def = "false",
     .help = "gradients on each node's whole data set instead of minibatches"},
    {.name = "l2", .type = DT_KEY_FLOAT, .offset = POFF(l2), .def = "0.0", .min = 0, .max = INF,
     .help = "L2 regularisation: lambda/2 ||theta||^2 added to every node's loss"},
    {.name = "optimizer_config", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED, .help = "the algorithm and its keys"},
    {0},
};

const dt_key config_optimizer_common_keys[] = {
    {.name = "alg_name", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED,
     .help = "the algorithm: the name of an optimizer plug-in (their keys follow)"},
    {.name = "outer_iterations", .type = DT_KEY_INT, .offset = POFF(outer_iterations), .def = "100", .min = 1, .max = 1e9,
     .help = "communication rounds"},
    {.name = "profile", .type = DT_KEY_BOOL, .offset = POFF(profile), .def = "false", .help = "print a per-round time breakdown at the end: round times, and the phases (batch, forward, backward, mix, exchange, evaluation, other)"},
    {0},
};

/* A layer's `type`; the keys of each type are its definition's (src/nn/layers/). */
const dt_key config_layer_keys[] = {
    {.name = "type", .type = DT_KEY_ENUM, .offset = offsetof(dt_layer_spec, kind), .flags = DT_KEY_REQUIRED, .values = config_layer_names,
     .help = "conv2d, maxpool2d, linear, relu, flatten, dropout, batchnorm2d, groupnorm, avgpool2d, global_avgpool, residual"},
    {0},
};

/* ---- plug-ins by name ------------------------------------------------------------------------- */

bool dt_plugin_named(const dt_plugin *p, const char *name) {
  if (strcmp(p->name, name) == 0) return true;
  for (int a = 0; p->aliases != NULL && p->aliases[a] != NULL; a++)
    if (strcmp(p->aliases[a], name) == 0) return true;
  return false;
}

const dt_plugin *config_optimizer_named(const dt_registry *reg, const char *name) {
  for (int i = 0; reg->optimizers[i] != NULL; i++)
    if (dt_plugin_named(reg->optimizers[i], name)) return reg->optimizers[i];
  return NULL;
}

const dt_key config_root_keys[] = {
    {.name = "experiment", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED, .help = "the experiment"},
    {.name = "problem_configs", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED, .help = "the (problem, optimizer) pairs"},
    /* read by dt_sweep_load (src/config/sweep.c); a single run ignores it */
    {.name = "sweep", .type = DT_KEY_SPECIAL, .help = "a grid of experiments over config keys (configs/README.md, \"Sweeps\")"},
    {0},
};

/* ---- documentation walk -------------------------------------------------------------------- */

static void visit_rows(const dt_key *keys, const char *prefix, dt_config_key_visitor visit, void *ctx) {
  for (int i = 0; keys[i].name != NULL; i++) {
    char path[512];
    int len = snprintf(path, sizeof path, "%s%s.", prefix, keys[i].name);
    if (len < 0 || (size_t)len >= sizeof path) continue; /* no schema nests that deep */
    if (keys[i].type == DT_KEY_SECTION) visit_rows(keys[i].sub, path, visit, ctx);
    path[len - 1] = '\0';
    visit(path, &keys[i], ctx);
  }
}

void dt_config_visit_keys(const dt_registry *reg, dt_config_key_visitor visit, void *ctx) {
  experiment_table t;
  if (config_experiment_table_make(reg, &t) != DT_OK) return; /* a broken registry fails every load first */
  visit_rows(t.rows, "experiment.", visit, ctx);
  visit_rows(config_layer_keys, "experiment.model.layers[].", visit, ctx);
  for (int k = 0; config_layer_names[k] != NULL; k++) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "experiment.model.layers[].(%s).", config_layer_names[k]);
    visit_rows(dt_layer_def_of((dt_layer_kind)k)->keys, prefix, visit, ctx);
  }
  visit_rows(config_problem_keys, "problem_configs.<name>.", visit, ctx);
  static const dt_key mc = {.name = "evaluate_frequency", .type = DT_KEY_INT, .help = "seed spelling of evaluate_frequency"};
  visit("problem_configs.<name>.metrics_config.evaluate_frequency", &mc, ctx);
  visit_rows(config_optimizer_common_keys, "problem_configs.<name>.optimizer_config.", visit, ctx);
  for (int i = 0; reg->optimizers[i] != NULL; i++) {
    char prefix[256];
    snprintf(prefix, sizeof prefix, "problem_configs.<name>.optimizer_config.(%s).", reg->optimizers[i]->name);
    visit_rows(reg->optimizers[i]->keys, prefix, visit, ctx);
  }
}
