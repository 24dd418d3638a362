/*
 * Fake libnvidia-ml.so.1 for gpuops.gpu_operator tests.
 * Copyright: gpuops.gpu_operator contributors
 * GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
 *
 * Reads the fixture named by $GPUOPS_FAKE_NVML_FIXTURE: a flat YAML mapping, one
 * "key: value" per line ('#' comments). Keys: driver_version, nvml_version,
 * cuda_version, init_error (NVML return code for nvmlInit), gpu_count, and per GPU
 * "gpu.<index>.<field>" with "gpu.*.<field>" as the default for every GPU.
 * A value "unsupported" makes the call return NVML_ERROR_NOT_SUPPORTED; a value
 * "error:<code>" returns that code. "gpu.<i>.lost: true" makes the GPU fall off the bus.
 * "include: <file>" (relative to the fixture's directory) reads another fixture under this one's keys.
 * "init_hang_seconds: N" makes nvmlInit block N seconds first, as NVML does on a GPU that fell off the bus.
 *
 * For NVIDIA's k8s-device-plugin and nvidia-ctk (through go-nvml) it also has nvmlDeviceGetMinorNumber
 * ("gpu.<i>.minor_number", default the index), nvmlDeviceGetIndex, nvmlDeviceGetHandleByUUID and events:
 * nvmlDeviceGetSupportedEventTypes ("gpu.<i>.supported_event_types", default SBE|DBE|PState|Xid|Clock = 0x1f),
 * nvmlEventSetCreate/Free, nvmlDeviceRegisterEvents and nvmlEventSetWait(_v2). The wait re-reads the fixture
 * file every 50 ms until its timeout (then NVML_ERROR_TIMEOUT); "gpu.<i>.xid: 79" on a GPU registered for Xid
 * events delivers one nvmlEventTypeXidCriticalError event (eventData 79) per new value, so a test makes a GPU
 * unhealthy at runtime by appending that line. Removing the line re-arms it.
 * Thread safe: Go calls in from several threads, and each nvmlInit publishes a freshly read fixture.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXKV 2048
#define MAXGPU 16
#define MAXMIG 8
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_GPU_IS_LOST 15
#define EVENT_SBE 0x1ULL
#define EVENT_DBE 0x2ULL
#define EVENT_PSTATE 0x4ULL
#define EVENT_XID 0x8ULL
#define EVENT_CLOCK 0x10ULL

typedef struct { int index; int parent; } dev_t_;
/* One parsed fixture. nvmlInit publishes a new table but frees a replaced one only 16 inits later: Go programs
 * call NVML from several threads at once, so another thread may still be reading it. */
typedef struct { int n; char *keys[MAXKV], *vals[MAXKV]; } table_t;
static table_t *volatile tab = NULL;
static table_t *retired[16];
static unsigned nretired = 0;
static int inited = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dev_t_ gpus[MAXGPU];
static dev_t_ migs[MAXGPU * MAXMIG];

static char *trim(char *s) {
    char *e;
    while (*s == ' ' || *s == '\t') s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
    if (e - s >= 2 && ((s[0] == '"' && e[-1] == '"') || (s[0] == '\'' && e[-1] == '\''))) { e[-1] = 0; s++; }
    return s;
}

/* Reads one fixture file; its "include: <file>" (relative to its directory) is read after it, so the including
 * file's keys win (get() returns the first match). */
static void read_fixture(table_t *t, const char *path, int depth);

/* Reads fixture lines from f (then closes it); an include is relative to path's directory. */
static void read_lines(table_t *t, FILE *f, const char *path, int depth) {
    char line[1024], include[1024] = "", full[2300];
    const char *slash;
    while (fgets(line, sizeof line, f) && t->n < MAXKV) {
        char *p = trim(line), *c;
        if (!*p || *p == '#' || !strncmp(p, "---", 3)) continue;
        c = strstr(p, ": ");
        if (!c) { c = p + strlen(p) - 1; if (*c != ':') continue; }
        *c = 0;
        if (!strcmp(trim(p), "include")) {
            snprintf(include, sizeof include, "%s", trim(c + 2));
            continue;
        }
        t->keys[t->n] = strdup(trim(p));
        t->vals[t->n] = strdup(trim(c + 1 + (c[1] ? 1 : 0)));
        t->n++;
    }
    fclose(f);
    if (!*include) return;
    slash = strrchr(path, '/');
    if (include[0] != '/' && slash) snprintf(full, sizeof full, "%.*s/%s", (int)(slash - path), path, include);
    else snprintf(full, sizeof full, "%s", include);
    read_fixture(t, full, depth + 1);
}

static void read_fixture(table_t *t, const char *path, int depth) {
    FILE *f;
    if (!path || depth > 4 || !(f = fopen(path, "r"))) return;
    read_lines(t, f, path, depth);
}

/* A node's copy of the library (tests/sim/realnode/driver_root.py) carries its fixture, read when
 * GPUOPS_FAKE_NVML_FIXTURE is unset: a container that mounts only the library still sees that node's GPUs. */
extern const char gpuops_embedded_fixture[] __attribute__((weak));

__attribute__((constructor)) static void setup_handles(void) {
    int i;
    for (i = 0; i < MAXGPU; i++) gpus[i].index = i, gpus[i].parent = -1;
    for (i = 0; i < MAXGPU * MAXMIG; i++) migs[i].index = i % MAXMIG, migs[i].parent = i / MAXMIG;
}

static table_t *parse_fixture(void) {
    table_t *t = calloc(1, sizeof *t);
    const char *path = getenv("GPUOPS_FAKE_NVML_FIXTURE");
    FILE *f;
    if (path) read_fixture(t, path, 0);
    else if (gpuops_embedded_fixture && (f = fmemopen((void *)gpuops_embedded_fixture, strlen(gpuops_embedded_fixture), "r")))
        read_lines(t, f, "", 0);
    return t;
}

static void free_table(table_t *t) {
    int i;
    for (i = 0; i < t->n; i++) { free(t->keys[i]); free(t->vals[i]); }
    free(t);
}

static const char *tget(const table_t *t, const char *k) {
    int i;
    for (i = 0; i < t->n; i++) if (!strcmp(t->keys[i], k)) return t->vals[i];
    return NULL;
}

/* "gpu.<idx>.<field>", else "gpu.*.<field>" */
static const char *tgget(const table_t *t, int idx, const char *field) {
    char k[128];
    const char *v;
    snprintf(k, sizeof k, "gpu.%d.%s", idx, field);
    if ((v = tget(t, k))) return v;
    snprintf(k, sizeof k, "gpu.*.%s", field);
    return tget(t, k);
}

static table_t *current(void) {
    table_t *t = tab;
    if (!t) {
        pthread_mutex_lock(&lock);
        if (!tab) tab = parse_fixture();
        t = tab;
        pthread_mutex_unlock(&lock);
    }
    return t;
}

static const char *get(const char *k) { return tget(current(), k); }
static const char *gget(int idx, const char *field) { return tgget(current(), idx, field); }

/* returns NVML code for value v; 0 when usable */
static int vcode(const char *v) {
    if (!v || !strcmp(v, "unsupported") || !strcmp(v, "null")) return NVML_ERROR_NOT_SUPPORTED;
    if (!strncmp(v, "error:", 6)) return atoi(v + 6);
    return 0;
}

static int gpu_count(void) {
    const char *v = get("gpu_count");
    int n = v ? atoi(v) : 0;
    return n > MAXGPU ? MAXGPU : n;
}

static int truthy(const char *v) { return v && (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")); }

/* The GPUs this process sees, as fixture indices in NVML's order. Where the driver's control device exists
 * (/dev/nvidiactl: a GPU node, or a container the NVIDIA runtime gave GPUs) NVML enumerates only the GPUs whose
 * /dev/nvidia<minor> this process can see, indexed from 0, as the real library does; elsewhere every GPU. */
static int visible_gpus(int *map) {
    int n = gpu_count(), k = 0, i, filter = access("/dev/nvidiactl", F_OK) == 0;
    char path[32];
    for (i = 0; i < n; i++) {
        const char *minor = gget(i, "minor_number");
        snprintf(path, sizeof path, "/dev/nvidia%d", minor && !vcode(minor) ? atoi(minor) : i);
        if (!filter || access(path, F_OK) == 0) map[k++] = i;
    }
    return k;
}

/* validate handle; *idx gets GPU index; returns NVML code */
static int dev(void *h, int *idx, int *mig) {
    dev_t_ *d = (dev_t_ *)h;
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    if (d >= gpus && d < gpus + MAXGPU) { *idx = d->index; *mig = -1; }
    else if (d >= migs && d < migs + MAXGPU * MAXMIG) { *idx = d->parent; *mig = d->index; }
    else return NVML_ERROR_INVALID_ARGUMENT;
    if (truthy(gget(*idx, "lost"))) return NVML_ERROR_GPU_IS_LOST;
    return 0;
}

static int getstr(void *h, const char *field, char *buf, unsigned len) {
    int i, m, rc;
    const char *v;
    if ((rc = dev(h, &i, &m))) return rc;
    v = gget(i, field);
    if ((rc = vcode(v))) return rc;
    if (strlen(v) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buf, v);
    return 0;
}

#define GETNUM(T, field, out) do { int i_, m_, rc_; const char *v_; \
        if ((rc_ = dev(h, &i_, &m_))) { return rc_; } \
        v_ = gget(i_, field); \
        if ((rc_ = vcode(v_))) { return rc_; } \
        *(out) = (T)strtoull(v_, NULL, 0); \
    } while (0)

static int sysstr(const char *k, char *buf, unsigned len) {
    const char *v = get(k);
    int rc;
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    if ((rc = vcode(v))) return rc;
    if (strlen(v) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buf, v);
    return 0;
}

/* Re-reads the fixture on every init, so one process can switch fixtures. */
int nvmlInitWithFlags(unsigned flags) {
    const char *v;
    table_t *t = parse_fixture();
    (void)flags;
    pthread_mutex_lock(&lock);
    if (tab) {
        unsigned slot = nretired++ % 16;
        if (retired[slot]) free_table(retired[slot]);
        retired[slot] = tab;
    }
    tab = t;
    pthread_mutex_unlock(&lock);
    if ((v = tget(t, "init_hang_seconds"))) sleep((unsigned)atoi(v));
    v = tget(t, "init_error");
    if (v && atoi(v)) return atoi(v);
    pthread_mutex_lock(&lock);
    inited++; /* NVML counts inits: each nvmlShutdown undoes one */
    pthread_mutex_unlock(&lock);
    return 0;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlInit(void) { return nvmlInitWithFlags(0); }
int nvmlShutdown(void) {
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (inited) inited--;
    else rc = NVML_ERROR_UNINITIALIZED;
    pthread_mutex_unlock(&lock);
    return rc;
}

const char *nvmlErrorString(int rc) {
    switch (rc) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 10: return "Timeout";
    case 12: return "NVML Shared Library Not Found";
    case 13: return "Function Not Found";
    case 15: return "GPU is lost";
    case 18: return "Driver/library version mismatch";
    default: return "Unknown Error";
    }
}

int nvmlSystemGetDriverVersion(char *b, unsigned l) { return sysstr("driver_version", b, l); }
int nvmlSystemGetNVMLVersion(char *b, unsigned l) { return sysstr("nvml_version", b, l); }
int nvmlSystemGetCudaDriverVersion(int *v) {
    const char *s = get("cuda_version");
    int rc;
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    if ((rc = vcode(s))) return rc;
    *v = atoi(s);
    return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

int nvmlDeviceGetCount_v2(unsigned *n) {
    int map[MAXGPU];
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    *n = visible_gpus(map);
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) {
    int map[MAXGPU];
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    if ((int)i >= visible_gpus(map)) return NVML_ERROR_INVALID_ARGUMENT;
    if (truthy(gget(map[i], "lost"))) return NVML_ERROR_GPU_IS_LOST;
    *h = &gpus[map[i]];
    return 0;
}

int nvmlDeviceGetName(void *h, char *b, unsigned l) { return getstr(h, "name", b, l); }
int nvmlDeviceGetSerial(void *h, char *b, unsigned l) { return getstr(h, "serial", b, l); }
int nvmlDeviceGetVbiosVersion(void *h, char *b, unsigned l) { return getstr(h, "vbios", b, l); }
int nvmlDeviceGetUUID(void *h, char *b, unsigned l) {
    int i, m, rc;
    if ((rc = dev(h, &i, &m))) return rc;
    if (m < 0) return getstr(h, "uuid", b, l);
    /* MIG device: derived from the parent's UUID */
    {
        const char *pu = gget(i, "uuid");
        if ((rc = vcode(pu))) return rc;
        snprintf(b, l, "MIG-%s-%d", strncmp(pu, "GPU-", 4) ? pu : pu + 4, m);
    }
    return 0;
}

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} pci_t;
int nvmlDeviceGetPciInfo_v3(void *h, pci_t *p) {
    int i, m, rc;
    const char *v;
    if ((rc = dev(h, &i, &m))) return rc;
    memset(p, 0, sizeof *p);
    v = gget(i, "bus_id");
    if ((rc = vcode(v))) return rc;
    snprintf(p->busId, sizeof p->busId, "%s", v);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%s", v);
    v = gget(i, "pci_device_id");
    p->pciDeviceId = v ? (unsigned)strtoul(v, NULL, 0) : 0;
    v = gget(i, "pci_subsystem_id");
    p->pciSubSystemId = v ? (unsigned)strtoul(v, NULL, 0) : 0;
    return 0;
}
int nvmlDeviceGetPciInfo_v2(void *h, pci_t *p) { return nvmlDeviceGetPciInfo_v3(h, p); }

int nvmlDeviceGetArchitecture(void *h, unsigned *a) { GETNUM(unsigned, "architecture", a); return 0; }
int nvmlDeviceGetCudaComputeCapability(void *h, int *maj, int *min) {
    GETNUM(int, "cc_major", maj); GETNUM(int, "cc_minor", min); return 0;
}

typedef struct { unsigned long long total, free, used; } mem_t;
int nvmlDeviceGetMemoryInfo(void *h, mem_t *mm) {
    int i, m, rc;
    if ((rc = dev(h, &i, &m))) return rc;
    if (m >= 0) {
        GETNUM(unsigned long long, "mig_memory_total", &mm->total);
        mm->used = 0;
    } else {
        GETNUM(unsigned long long, "memory_total", &mm->total);
        GETNUM(unsigned long long, "memory_used", &mm->used);
    }
    mm->free = mm->total - mm->used;
    return 0;
}

int nvmlDeviceGetMigMode(void *h, unsigned *cur, unsigned *pend) {
    GETNUM(unsigned, "mig_current", cur); GETNUM(unsigned, "mig_pending", pend); return 0;
}
int nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned *n) { GETNUM(unsigned, "mig_max_devices", n); return 0; }
int nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned j, void **out) {
    int i, m, rc;
    unsigned n = 0;
    if ((rc = dev(h, &i, &m))) return rc;
    GETNUM(unsigned, "mig_devices", &n);
    if (j >= n || j >= MAXMIG) return 6; /* NVML_ERROR_NOT_FOUND */
    *out = &migs[i * MAXMIG + j];
    return 0;
}
int nvmlDeviceIsMigDeviceHandle(void *h, unsigned *r) { int i, m, rc; if ((rc = dev(h, &i, &m))) return rc; *r = m >= 0; return 0; }

int nvmlDeviceGetEccMode(void *h, unsigned *cur, unsigned *pend) {
    GETNUM(unsigned, "ecc_current", cur); GETNUM(unsigned, "ecc_pending", pend); return 0;
}
int nvmlDeviceGetTotalEccErrors(void *h, unsigned type, unsigned counter, unsigned long long *c) {
    /* type 0 = corrected, 1 = uncorrected; counter 0 = volatile, 1 = aggregate */
    static const char *f[2][2] = {{"ecc_volatile_corrected", "ecc_aggregate_corrected"},
                                  {"ecc_volatile_uncorrected", "ecc_aggregate_uncorrected"}};
    if (type > 1 || counter > 1) return NVML_ERROR_INVALID_ARGUMENT;
    GETNUM(unsigned long long, f[type][counter], c);
    return 0;
}
int nvmlDeviceGetRetiredPages(void *h, unsigned cause, unsigned *count, unsigned long long *addrs) {
    /* cause 0 = multiple single-bit, 1 = double-bit */
    unsigned n = 0, k;
    GETNUM(unsigned, cause ? "retired_pages_dbe" : "retired_pages_sbe", &n);
    if (!addrs) { *count = n; return 0; }
    if (*count < n) { *count = n; return NVML_ERROR_INSUFFICIENT_SIZE; }
    for (k = 0; k < n; k++) addrs[k] = 0x1000ULL * (k + 1);
    *count = n;
    return 0;
}
int nvmlDeviceGetRetiredPagesPendingStatus(void *h, unsigned *p) { GETNUM(unsigned, "retired_pages_pending", p); return 0; }
int nvmlDeviceGetRemappedRows(void *h, unsigned *c, unsigned *u, unsigned *p, unsigned *f) {
    GETNUM(unsigned, "remapped_rows_corrected", c); GETNUM(unsigned, "remapped_rows_uncorrected", u);
    GETNUM(unsigned, "remapped_rows_pending", p); GETNUM(unsigned, "remapped_rows_failure", f);
    return 0;
}
int nvmlDeviceGetTemperature(void *h, unsigned sensor, unsigned *t) {
    if (sensor != 0) return NVML_ERROR_NOT_SUPPORTED;
    GETNUM(unsigned, "temperature", t);
    return 0;
}
int nvmlDeviceGetPowerUsage(void *h, unsigned *p) { GETNUM(unsigned, "power_usage_mw", p); return 0; }
int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *p) { GETNUM(unsigned, "power_limit_mw", p); return 0; }
int nvmlDeviceGetPersistenceMode(void *h, unsigned *p) { GETNUM(unsigned, "persistence_mode", p); return 0; }
int nvmlDeviceGetComputeMode(void *h, unsigned *p) { GETNUM(unsigned, "compute_mode", p); return 0; }
int nvmlDeviceGetCurrentClocksEventReasons(void *h, unsigned long long *r) { GETNUM(unsigned long long, "clock_event_reasons", r); return 0; }
int nvmlDeviceGetCurrentClocksThrottleReasons(void *h, unsigned long long *r) { return nvmlDeviceGetCurrentClocksEventReasons(h, r); }
int nvmlDeviceGetCurrPcieLinkGeneration(void *h, unsigned *g) { GETNUM(unsigned, "pcie_generation", g); return 0; }
int nvmlDeviceGetCurrPcieLinkWidth(void *h, unsigned *w) { GETNUM(unsigned, "pcie_width", w); return 0; }

typedef struct {
    unsigned char clusterUuid[16];
    unsigned status;
    unsigned cliqueId;
    unsigned state;
} fabric_t;
int nvmlDeviceGetGpuFabricInfo(void *h, fabric_t *fi) {
    memset(fi, 0, sizeof *fi);
    GETNUM(unsigned, "fabric_state", &fi->state);
    GETNUM(unsigned, "fabric_status", &fi->status);
    GETNUM(unsigned, "fabric_clique_id", &fi->cliqueId);
    return 0;
}

/* --- What NVIDIA's k8s-device-plugin and nvidia-ctk call (signatures from NVML's nvml.h) --- */

/* /dev/nvidia<minor>: the GPU index unless gpu.<i>.minor_number says otherwise */
int nvmlDeviceGetMinorNumber(void *h, unsigned *minor) {
    int i, m, rc;
    const char *v;
    if ((rc = dev(h, &i, &m))) return rc;
    v = gget(i, "minor_number");
    if (!v) { *minor = (unsigned)i; return 0; }
    if ((rc = vcode(v))) return rc;
    *minor = (unsigned)strtoul(v, NULL, 0);
    return 0;
}
int nvmlDeviceGetIndex(void *h, unsigned *index) {
    int i, m, rc;
    int map[MAXGPU], n, k;
    if ((rc = dev(h, &i, &m))) return rc;
    if (m >= 0) { *index = (unsigned)m; return 0; }
    n = visible_gpus(map);
    for (k = 0; k < n && map[k] != i; k++) {}
    if (k == n) return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned)k;
    return 0;
}

/* GPU or MIG device by UUID; NVML_ERROR_NOT_FOUND when no device has it */
static void *find_uuid(const char *uuid) {
    int i, j, n, v, map[MAXGPU], nv = visible_gpus(map);
    char mig[96];
    for (v = 0; v < nv; v++) {
        const char *u, *mv;
        i = map[v];
        u = gget(i, "uuid");
        mv = gget(i, "mig_devices");
        if (vcode(u)) continue;
        if (!strcmp(u, uuid)) return &gpus[i];
        n = vcode(mv) ? 0 : atoi(mv);
        for (j = 0; j < n && j < MAXMIG; j++) {
            snprintf(mig, sizeof mig, "MIG-%s-%d", strncmp(u, "GPU-", 4) ? u : u + 4, j);
            if (!strcmp(mig, uuid)) return &migs[i * MAXMIG + j];
        }
    }
    return NULL;
}
int nvmlDeviceGetHandleByUUID(const char *uuid, void **h) {
    int i, m;
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !h) return NVML_ERROR_INVALID_ARGUMENT;
    if (!(*h = find_uuid(uuid))) return NVML_ERROR_NOT_FOUND;
    return dev(*h, &i, &m);
}

/* Events. An event set remembers, per GPU, the event types registered and the last Xid it delivered.
 * nvmlEventSetWait_v2 re-reads the fixture every 50 ms until its timeout: a GPU registered for Xid events whose
 * gpu.<i>.xid holds a number other than the last delivered one yields one nvmlEventTypeXidCriticalError event
 * (eventData = that Xid). Removing the field (or 0) re-arms it, so the same Xid can be delivered again. */
typedef struct {
    void *device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
} event_t;
typedef struct { unsigned long long mask[MAXGPU]; unsigned long long seen[MAXGPU]; } eventset_t;

int nvmlEventSetCreate(eventset_t **set) {
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    *set = calloc(1, sizeof **set);
    return 0;
}
int nvmlEventSetFree(eventset_t *set) {
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    free(set);
    return 0;
}

/* gpu.<i>.supported_event_types (a mask); default: ECC single/double bit, P-state, Xid, clock */
int nvmlDeviceGetSupportedEventTypes(void *h, unsigned long long *types) {
    int i, m, rc;
    const char *v;
    if ((rc = dev(h, &i, &m))) return rc;
    v = gget(i, "supported_event_types");
    if (!v) { *types = EVENT_SBE | EVENT_DBE | EVENT_PSTATE | EVENT_XID | EVENT_CLOCK; return 0; }
    if ((rc = vcode(v))) return rc;
    *types = strtoull(v, NULL, 0);
    return 0;
}
int nvmlDeviceRegisterEvents(void *h, unsigned long long types, eventset_t *set) {
    int i, m, rc;
    unsigned long long supported;
    if ((rc = dev(h, &i, &m))) return rc;
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = nvmlDeviceGetSupportedEventTypes(&gpus[i], &supported))) return rc;
    if (types & ~supported) return NVML_ERROR_NOT_SUPPORTED;
    set->mask[i] |= types;
    return 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* 1 and fills *e when the fixture holds a new Xid for a registered GPU */
static int next_xid(eventset_t *set, event_t *e) {
    table_t *t = parse_fixture();
    const char *v = tget(t, "gpu_count");
    int i, found = 0, n = v ? atoi(v) : 0;
    for (i = 0; i < n && i < MAXGPU && !found; i++) {
        unsigned long long xid;
        if (!(set->mask[i] & EVENT_XID)) continue;
        v = tgget(t, i, "xid");
        xid = v && !vcode(v) ? strtoull(v, NULL, 0) : 0;
        if (!xid) { set->seen[i] = 0; continue; }
        if (xid == set->seen[i]) continue;
        set->seen[i] = xid;
        memset(e, 0, sizeof *e);
        e->device = &gpus[i];
        e->eventType = EVENT_XID;
        e->eventData = xid;
        e->gpuInstanceId = e->computeInstanceId = 0xFFFFFFFF;
        found = 1;
    }
    free_table(t);
    return found;
}

int nvmlEventSetWait_v2(eventset_t *set, event_t *data, unsigned timeoutms) {
    double deadline = now_ms() + timeoutms;
    if (!inited) return NVML_ERROR_UNINITIALIZED;
    if (!set || !data) return NVML_ERROR_INVALID_ARGUMENT;
    for (;;) {
        double left;
        if (next_xid(set, data)) return 0;
        left = deadline - now_ms();
        if (left <= 0) return NVML_ERROR_TIMEOUT;
        usleep(left < 50 ? (useconds_t)(left * 1000) : 50000);
    }
}
/* v1 event data has no GPU/compute instance ids */
int nvmlEventSetWait(eventset_t *set, event_t *data, unsigned timeoutms) {
    event_t e;
    int rc;
    if (!data) return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = nvmlEventSetWait_v2(set, &e, timeoutms))) return rc;
    memcpy(data, &e, offsetof(event_t, gpuInstanceId));
    return 0;
}

/* Topology (the device plugin's preferred allocation): the common ancestor of two GPUs is gpu.<i>.topology_level
 * of the first (an NVML_TOPOLOGY_* value: 0 internal, 10 single switch, 20 multiple, 30 host bridge, 40 NUMA node,
 * 50 system), 40 when the fixture does not say; NVLink state and remote PCI info are not supported. */
int nvmlDeviceGetTopologyCommonAncestor(void *h1, void *h2, unsigned *level) {
    int i, m, rc;
    const char *v;
    if ((rc = dev(h2, &i, &m))) return rc;
    if ((rc = dev(h1, &i, &m))) return rc;
    v = gget(i, "topology_level");
    *level = v && !vcode(v) ? (unsigned)strtoul(v, NULL, 0) : 40;
    return 0;
}
int nvmlDeviceGetNvLinkState(void *h, unsigned link, unsigned *active) {
    int i, m, rc;
    (void)link; (void)active;
    if ((rc = dev(h, &i, &m))) return rc;
    return NVML_ERROR_NOT_SUPPORTED;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *h, unsigned link, void *pci) {
    int i, m, rc;
    (void)link; (void)pci;
    if ((rc = dev(h, &i, &m))) return rc;
    return NVML_ERROR_NOT_SUPPORTED;
}
