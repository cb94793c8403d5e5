/**
 * Rollcount's sketches, JDK only.
 *
 * <ul>
 *   <li>{@link io.rollcount.sketches.RedisHyperLogLog}: distinct counts whose bytes are a Redis 7
 *       HyperLogLog value (PFCOUNT / PFMERGE read them; PFADD of the same items builds the same bytes).
 *   <li>{@link io.rollcount.sketches.CountMinSketch}: weighted, exponentially decayed frequencies with
 *       conservative update.
 *   <li>{@link io.rollcount.sketches.SpaceSavingTopK}: decayed, mergeable Space-Saving top-K.
 *   <li>{@link io.rollcount.sketches.TrendingSketch}: the two above on one clock, what the job keeps per
 *       key group and merges per namespace.
 * </ul>
 *
 * <p>References: Flajolet, Fusy, Gandouet, Meunier, "HyperLogLog: the analysis of a near-optimal
 * cardinality estimation algorithm", AofA 2007; Heule, Nunkesser, Hall, "HyperLogLog in Practice",
 * EDBT 2013; Ertl, "New cardinality estimation algorithms for HyperLogLog sketches", arXiv:1702.01284,
 * 2017; Cormode and Muthukrishnan, "An Improved Data Stream Summary: The Count-Min Sketch and its
 * Applications", J. Algorithms 55(1), 2005; Estan and Varghese, "New Directions in Traffic Measurement
 * and Accounting", SIGCOMM 2002; Cormode, Shkapenyuk, Srivastava, Xu, "Forward Decay: A Practical Time
 * Decay Model for Streaming Systems", ICDE 2009; Metwally, Agrawal, El Abbadi, "Efficient Computation of
 * Frequent and Top-k Elements in Data Streams", ICDT 2005; Agarwal, Cormode, Huang, Phillips, Wei, Yi,
 * "Mergeable Summaries", PODS 2012.
 */
package io.rollcount.sketches;
