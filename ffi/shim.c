/* See shim.h: thin exported copies of DPDK static inline functions. */
#include <rte_config.h>
#include <rte_errno.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_lpm.h>
#include "shim.h"

int shim_rte_errno(void) { return rte_errno; }
void shim_set_rte_errno(int v) { rte_errno = v; }
uint64_t shim_rte_rdtsc(void) { return rte_rdtsc(); }
unsigned shim_rte_lcore_id(void) { return rte_lcore_id(); }

uint16_t shim_rte_eth_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **rx_pkts, uint16_t nb_pkts)
{ return rte_eth_rx_burst(port_id, queue_id, rx_pkts, nb_pkts); }
uint16_t shim_rte_eth_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **tx_pkts, uint16_t nb_pkts)
{ return rte_eth_tx_burst(port_id, queue_id, tx_pkts, nb_pkts); }

struct rte_mbuf *shim_rte_pktmbuf_alloc(struct rte_mempool *mp) { return rte_pktmbuf_alloc(mp); }
int shim_rte_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned count)
{ return rte_pktmbuf_alloc_bulk(mp, mbufs, count); }
void shim_rte_pktmbuf_free(struct rte_mbuf *m) { rte_pktmbuf_free(m); }
char *shim_rte_pktmbuf_append(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_append(m, len); }
char *shim_rte_pktmbuf_adj(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_adj(m, len); }
int shim_rte_pktmbuf_trim(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_trim(m, len); }
struct rte_mbuf *shim_rte_pktmbuf_clone(struct rte_mbuf *md, struct rte_mempool *mp) { return rte_pktmbuf_clone(md, mp); }
int shim_rte_pktmbuf_is_contiguous(const struct rte_mbuf *m) { return rte_pktmbuf_is_contiguous(m); }

unsigned shim_rte_ring_enqueue_burst(struct rte_ring *r, void *const *obj_table, unsigned n, unsigned *free_space)
{ return rte_ring_enqueue_burst(r, obj_table, n, free_space); }
unsigned shim_rte_ring_dequeue_burst(struct rte_ring *r, void **obj_table, unsigned n, unsigned *available)
{ return rte_ring_dequeue_burst(r, obj_table, n, available); }
unsigned shim_rte_ring_count(const struct rte_ring *r) { return rte_ring_count(r); }
unsigned shim_rte_ring_free_count(const struct rte_ring *r) { return rte_ring_free_count(r); }

int shim_rte_lpm_lookup_bulk(const struct rte_lpm *lpm, const uint32_t *ips, uint32_t *next_hops, unsigned n)
{ return rte_lpm_lookup_bulk(lpm, ips, next_hops, n); }
int shim_rte_lpm_lookup(struct rte_lpm *lpm, uint32_t ip, uint32_t *next_hop)
{ return rte_lpm_lookup(lpm, ip, next_hop); }
