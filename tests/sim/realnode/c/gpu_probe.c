/*
 * The test bed's stand-in for NVIDIA's CUDA vectoradd sample (and, linked as nvidia-smi, for `nvidia-smi -L`):
 * it reports what the container received - NVIDIA_VISIBLE_DEVICES, the GPU device files, the NVML library if
 * one was mounted and what it says - and passes ("Test PASSED", exit 0) only when GPU device files were
 * injected and a mounted NVML, if any, lists GPUs. It computes nothing on a GPU: there is none here.
 * Copyright: gpuops.gpu_operator contributors
 * GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*init_fn)(void);
typedef int (*count_fn)(unsigned *);
typedef int (*handle_fn)(unsigned, void **);
typedef int (*str_fn)(void *, char *, unsigned);
typedef const char *(*err_fn)(int);

static int gpu_files(void) {
    DIR *d = opendir("/dev");
    struct dirent *e;
    int n = 0;
    if (!d) return 0;
    printf("device files:");
    while ((e = readdir(d))) {
        if (!strncmp(e->d_name, "nvidia", 6)) {
            printf(" /dev/%s", e->d_name);
            if (e->d_name[6] >= '0' && e->d_name[6] <= '9') n++;
        }
    }
    printf("%s\n", n ? "" : " none");
    closedir(d);
    return n;
}

/* the GPUs NVML lists (printed as nvidia-smi -L does); -1 when no NVML is mounted, -2 when it fails */
static int nvml_gpus(void) {
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    unsigned n = 0, i;
    int rc;
    if (!lib) { printf("NVML: not mounted (%s)\n", dlerror()); return -1; }
    init_fn init = (init_fn)dlsym(lib, "nvmlInit_v2");
    count_fn count = (count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
    handle_fn handle = (handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    str_fn name = (str_fn)dlsym(lib, "nvmlDeviceGetName"), uuid = (str_fn)dlsym(lib, "nvmlDeviceGetUUID");
    err_fn err = (err_fn)dlsym(lib, "nvmlErrorString");
    if (!init || !count || !handle || !name || !uuid || !err) { printf("NVML: symbols missing\n"); return -2; }
    if ((rc = init()) || (rc = count(&n))) { printf("NVML: %s\n", err(rc)); return -2; }
    for (i = 0; i < n; i++) {
        void *h;
        char nm[96] = "?", id[96] = "?";
        if (!handle(i, &h)) { name(h, nm, sizeof nm); uuid(h, id, sizeof id); }
        printf("GPU %u: %s (UUID: %s)\n", i, nm, id);
    }
    return (int)n;
}

int main(int argc, char **argv) {
    const char *me = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    const char *visible = getenv("NVIDIA_VISIBLE_DEVICES");
    int files, gpus;
    if (!strcmp(me, "nvidia-smi")) {
        if (argc < 2 || strcmp(argv[1], "-L")) { fprintf(stderr, "this nvidia-smi knows only -L\n"); return 2; }
        return nvml_gpus() > 0 ? 0 : 9;
    }
    printf("gpuops gpu-probe\nNVIDIA_VISIBLE_DEVICES=%s\n", visible ? visible : "(unset)");
    files = gpu_files();
    gpus = nvml_gpus();
    if (!files) { printf("Test FAILED: no CUDA-capable device is detected (no GPU device file was injected)\n"); return 1; }
    if (gpus == 0 || gpus == -2) { printf("Test FAILED: NVML lists no GPU\n"); return 1; }
    printf("Test PASSED\n");
    return 0;
}
