/* A static helper the sandbox attack tests run inside every sandbox (the Docker test image has no Python).
 *
 *   probe serve PATH            listen on a unix socket, answer one client with "pong", exit
 *   probe connect PATH|@NAME    connect (an @NAME is abstract), print what the peer sent
 *   probe connect-loop PATH N   connect N times; print how many times a peer answered "outside"
 *   probe syscall NR [ARGS...]  a raw syscall; prints ret= and errno=
 *   probe fds                   the open fds of this process, its own directory stream excepted
 *   probe swap A B N            renameat2(A, B, RENAME_EXCHANGE) N times (0: forever)
 *   probe open-mode PATH MODE   open(PATH, O_CREAT|O_WRONLY, MODE) and report
 *   probe shm-read ID           attach a SysV shared memory segment by id and print its start
 *   probe fchmod PATH MODE      open(PATH, O_RDONLY), then fchmod on that fd (a mode change by descriptor)
 *   probe setxattr PATH         set the extended attribute user.kimi=1
 *   probe setflags PATH         chattr +A +d through FS_IOC_SETFLAGS
 *   probe prlimit PID RES SOFT  set another process's soft limit (RES: 4 core, 0 cpu), keeping its hard one
 *   probe int80 NR [A [B]]      a raw i386 syscall through int 0x80 (x86_64 only)
 *   probe mem-write PID         write one byte of PID's stack back through /proc/PID/mem
 *   probe opath-connect PATH    open(PATH, O_PATH), then connect to /proc/self/fd/N (the inode, by its fd)
 *   probe opath-chmod PATH MODE open(PATH, O_PATH), then chmod /proc/self/fd/N
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/xattr.h>
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
        /* A path socket is bound under a temporary name and renamed once it listens: a test that waits for
           the path to exist ([ -S path ]) then never connects between bind and listen (ECONNREFUSED). */
        struct sockaddr_un sa;
        char staged[sizeof sa.sun_path];
        int path_socket = argv[2][0] != '@';
        snprintf(staged, sizeof staged, "%s.tmp", argv[2]);
        socklen_t len = address(path_socket ? staged : argv[2], &sa);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) != 0 || listen(fd, 4) != 0
            || (path_socket && rename(staged, argv[2]) != 0)) {
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
    if (argc >= 4 && strcmp(argv[1], "fchmod") == 0) {
        int fd = open(argv[2], O_RDONLY);
        int r = fd < 0 ? -1 : fchmod(fd, (mode_t)strtol(argv[3], NULL, 8));
        printf(r != 0 ? "error: %s\n" : "fchmod-done%s\n", r != 0 ? strerror(errno) : "");
        return r != 0;
    }
    if (argc >= 3 && strcmp(argv[1], "setxattr") == 0) {
        int r = setxattr(argv[2], "user.kimi", "1", 1, 0);
        printf(r != 0 ? "error: %s\n" : "xattr-set%s\n", r != 0 ? strerror(errno) : "");
        return r != 0;
    }
    if (argc >= 3 && strcmp(argv[1], "setflags") == 0) {
        int fd = open(argv[2], O_RDONLY | O_NONBLOCK), flags = 0;
        int r = fd < 0 ? -1 : ioctl(fd, 0x80086601 /* FS_IOC_GETFLAGS */, &flags);
        flags |= 0x80 | 0x40; /* FS_NOATIME_FL | FS_NODUMP_FL */
        if (r == 0) r = ioctl(fd, 0x40086602 /* FS_IOC_SETFLAGS */, &flags);
        printf(r != 0 ? "error: %s\n" : "flags-set%s\n", r != 0 ? strerror(errno) : "");
        return r != 0;
    }
    if (argc >= 5 && strcmp(argv[1], "prlimit") == 0) {
        struct rlimit old, new;
        pid_t pid = (pid_t)atoi(argv[2]);
        int res = atoi(argv[3]);
        if (prlimit(pid, res, NULL, &old) != 0) {
            printf("error reading: %s\n", strerror(errno));
            return 1;
        }
        new.rlim_cur = strcmp(argv[4], "inf") == 0 ? old.rlim_max : (rlim_t)atol(argv[4]);
        new.rlim_max = old.rlim_max;
        int r = prlimit(pid, res, &new, NULL);
        printf(r != 0 ? "error: %s\n" : "limit-set%s\n", r != 0 ? strerror(errno) : "");
        return r != 0;
    }
    if (argc >= 3 && strcmp(argv[1], "int80") == 0) {
#if defined(__x86_64__)
        long nr = strtol(argv[2], NULL, 0), a = argc > 3 ? strtol(argv[3], NULL, 0) : 0;
        long b = argc > 4 ? strtol(argv[4], NULL, 0) : 0, ret;
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b) : "memory");
        printf("ret=%ld\n", ret);
        return 0;
#else
        printf("not x86_64\n");
        return 2;
#endif
    }
    if (argc >= 3 && strcmp(argv[1], "mem-write") == 0) {
        char path[64], line[512];
        unsigned long lo = 0, hi = 0;
        snprintf(path, sizeof path, "/proc/%s/maps", argv[2]);
        FILE *maps = fopen(path, "r");
        if (!maps) {
            printf("error: maps: %s\n", strerror(errno));
            return 1;
        }
        while (fgets(line, sizeof line, maps))
            if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) break;
        fclose(maps);
        snprintf(path, sizeof path, "/proc/%s/mem", argv[2]);
        int fd = open(path, O_RDWR);
        unsigned char byte;
        if (fd < 0 || hi == 0 || pread(fd, &byte, 1, (off_t)(hi - 8)) != 1 || pwrite(fd, &byte, 1, (off_t)(hi - 8)) != 1) {
            printf("error: %s\n", strerror(errno));
            return 1;
        }
        printf("memory-written\n");
        return 0;
    }
    if (argc >= 3 && (strcmp(argv[1], "opath-connect") == 0 || strcmp(argv[1], "opath-chmod") == 0)) {
        int fd = open(argv[2], O_PATH);
        if (fd < 0) {
            printf("error: open: %s\n", strerror(errno));
            return 1;
        }
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (argv[1][6] == 'c' && argv[1][7] == 'h') {
            int r = chmod(path, argc > 3 ? (mode_t)strtol(argv[3], NULL, 8) : 0777);
            printf(r != 0 ? "error: %s\n" : "chmod-done%s\n", r != 0 ? strerror(errno) : "");
            return r != 0;
        }
        int r = dial(path, buf, sizeof buf);
        if (r < 0) {
            printf("error: %s\n", strerror(-r));
            return 1;
        }
        printf("connected: %s\n", buf);
        return 0;
    }
    fprintf(stderr, "usage: probe serve|connect|connect-loop|syscall|fds|swap|open-mode|shm-read|fchmod|setxattr|"
                    "setflags|prlimit|int80|mem-write|opath-connect|opath-chmod ...\n");
    return 2;
}
