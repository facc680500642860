/* Exported wrappers around DPDK's static inline functions and macros.
 * Only per-burst or slow-path calls live here: per-packet accessors are
 * written in Rust over the bindgen struct fields so they inline. */
#ifndef DPDK_SYS_SHIM_H
#define DPDK_SYS_SHIM_H
#include <stdint.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_lpm.h>

struct rte_mempool;
struct rte_ring;

int shim_rte_errno(void);
void shim_set_rte_errno(int v);
uint64_t shim_rte_rdtsc(void);
unsigned shim_rte_lcore_id(void);

uint16_t shim_rte_eth_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **rx_pkts, uint16_t nb_pkts);
uint16_t shim_rte_eth_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **tx_pkts, uint16_t nb_pkts);

struct rte_mbuf *shim_rte_pktmbuf_alloc(struct rte_mempool *mp);
int shim_rte_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned count);
void shim_rte_pktmbuf_free(struct rte_mbuf *m);
char *shim_rte_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
char *shim_rte_pktmbuf_adj(struct rte_mbuf *m, uint16_t len);
int shim_rte_pktmbuf_trim(struct rte_mbuf *m, uint16_t len);
struct rte_mbuf *shim_rte_pktmbuf_clone(struct rte_mbuf *md, struct rte_mempool *mp);
int shim_rte_pktmbuf_is_contiguous(const struct rte_mbuf *m);

unsigned shim_rte_ring_enqueue_burst(struct rte_ring *r, void *const *obj_table, unsigned n, unsigned *free_space);
unsigned shim_rte_ring_dequeue_burst(struct rte_ring *r, void **obj_table, unsigned n, unsigned *available);
unsigned shim_rte_ring_count(const struct rte_ring *r);
unsigned shim_rte_ring_free_count(const struct rte_ring *r);

int shim_rte_lpm_lookup_bulk(const struct rte_lpm *lpm, const uint32_t *ips, uint32_t *next_hops, unsigned n);
int shim_rte_lpm_lookup(struct rte_lpm *lpm, uint32_t ip, uint32_t *next_hop);

#endif
