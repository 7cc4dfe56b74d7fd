/* notify.h - readiness for the service manager: systemd's sd_notify
 * protocol (sd_notify(3), a stable interface), spoken directly.
 *
 * When $NOTIFY_SOCKET names a socket (a path, or "@name" in the abstract
 * namespace), pfs_notify() sends one datagram of "KEY=VALUE" lines to it
 * (READY=1 once the mount is up, STOPPING=1 when it goes); without it,
 * nothing. No libsystemd: the protocol is one sendto(), so every build
 * speaks it and a test can check it with a socket of its own.
 * Thread-safe (no state); never blocks (MSG_DONTWAIT).
 */
#ifndef PFS_NOTIFY_H
#define PFS_NOTIFY_H

/* Sends `state` to $NOTIFY_SOCKET. Returns 1 if sent, 0 when there is no
 * socket to tell, or a negative errno (a socket name that is too long,
 * a send that failed); the caller may log it, nothing else depends on it. */
int pfs_notify(const char *state);

#endif
