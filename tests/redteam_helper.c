/* A static helper the red-team tests run inside every sandbox (the Docker test image has no Python).
 *
 *   probe serve PATH            listen on a unix socket, answer one client with "pong", exit
 *   probe connect PATH|@NAME    connect (an @NAME is abstract), print what the peer sent
 *   probe connect-loop PATH N   connect N times; print how many times a peer answered "outside"
 *   probe syscall NR [ARGS...]  a raw syscall; prints ret= and errno=
 *   probe fds                   the open fds of this process, its own directory stream excepted
 *   probe swap A B N            renameat2(A, B, RENAME_EXCHANGE) N times (0: forever)
 *   probe open-mode PATH MODE   open(PATH, O_CREAT|O_WRONLY, MODE) and report
 *   probe shm-read ID           attach a SysV shared memory segment by id and print its start
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static socklen_t address(const char *path, struct sockaddr_un *sa) {
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (path[0] == '@') {
        strncpy(sa->sun_path + 1, path + 1, sizeof sa->sun_path - 2);
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path + 1));
    }
    strncpy(sa->sun_path, path, sizeof sa->sun_path - 1);
    return (socklen_t)sizeof *sa;
}

static int dial(const char *path, char *buf, size_t size) {
    struct sockaddr_un sa;
    socklen_t len = address(path, &sa);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len) != 0) {
        int err = errno;
        if (fd >= 0) close(fd);
        return -err;
    }
    ssize_t n = read(fd, buf, size - 1);
    buf[n > 0 ? n : 0] = 0;
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "serve") == 0) {
        struct sockaddr_un sa;
        socklen_t len = address(argv[2], &sa);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) != 0 || listen(fd, 4) != 0) {
            printf("error: %s\n", strerror(errno));
            return 1;
        }
        printf("listening\n");
        fflush(stdout);
        int c = accept(fd, NULL, NULL);
        if (c < 0) return 1;
        if (write(c, "pong", 4) != 4) return 1;
        close(c);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "connect") == 0) {
        char buf[256];
        int r = dial(argv[2], buf, sizeof buf);
        if (r < 0) {
            printf("error: %s\n", strerror(-r));
            return 1;
        }
        printf("connected: %s\n", buf);
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "connect-loop") == 0) {
        int outside = 0, inside = 0, n = atoi(argv[3]);
        char buf[256];
        for (int i = 0; i < n; i++) {
            if (dial(argv[2], buf, sizeof buf) == 0) {
                if (strstr(buf, "outside")) outside++;
                else inside++;
            }
        }
        printf("inside=%d outside=%d\n", inside, outside);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "syscall") == 0) {
        long a[6] = {0};
        for (int i = 0; i < 6 && i + 3 < argc; i++) a[i] = strtol(argv[i + 3], NULL, 0);
        errno = 0;
        long r = syscall(strtol(argv[2], NULL, 0), a[0], a[1], a[2], a[3], a[4], a[5]);
        printf("ret=%ld errno=%d\n", r, r < 0 ? errno : 0);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "fds") == 0) {
        DIR *d = opendir("/proc/self/fd");
        if (!d) return 1;
        struct dirent *e;
        printf("fds:");
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
            printf(" %s", e->d_name);
        }
        printf("\n");
        closedir(d);
        return 0;
    }
    if (argc >= 5 && strcmp(argv[1], "swap") == 0) {
        long n = atol(argv[4]);
        for (long i = 0; n == 0 || i < n; i++) syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], 2);
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "open-mode") == 0) {
        int fd = open(argv[2], O_CREAT | O_WRONLY, (mode_t)strtol(argv[3], NULL, 8));
        printf(fd < 0 ? "error: %s\n" : "created%s\n", fd < 0 ? strerror(errno) : "");
        return fd < 0;
    }
    if (argc >= 3 && strcmp(argv[1], "shm-read") == 0) {
        char *mem = shmat(atoi(argv[2]), NULL, SHM_RDONLY);
        if (mem == (void *)-1) {
            printf("error: %s\n", strerror(errno));
            return 1;
        }
        printf("shm: %.64s\n", mem);
        return 0;
    }
    fprintf(stderr, "usage: probe serve|connect|connect-loop|syscall|fds|swap|open-mode|shm-read ...\n");
    return 2;
}
