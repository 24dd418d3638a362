/*
 * The pod sandbox's process for the test bed's real node (what registry.k8s.io/pause does): PID 1 of the pod,
 * holding its namespaces, reaping orphans, exiting on SIGINT/SIGTERM.
 * Copyright: gpuops.gpu_operator contributors
 * GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = reap;
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    for (;;) pause();
}
