// The C half of package vk: the Vulkan loader opened at run time (dlopen of
// libvulkan.so.1, as volk does), so that a program without it still starts. Every entry
// point is fetched through vkGetInstanceProcAddr; nothing links against -lvulkan.

#ifndef AMIDVK_H
#define AMIDVK_H

#define VK_NO_PROTOTYPES
#include <stdint.h>
#include <vulkan/vulkan.h>

// Loader states of amid_load.
enum { AMID_LOADED = 0, AMID_NO_LIBRARY = 1, AMID_NO_ENTRY = 2 };

// Memory kinds of amid_alloc.
enum { AMID_MEM_DEVICE = 0, AMID_MEM_UPLOAD = 1, AMID_MEM_READBACK = 2 };

// Operation kinds of amid_record.
enum {
	AMID_OP_DISPATCH = 0,
	AMID_OP_BARRIER = 1,
	AMID_OP_COPY = 2,
	AMID_OP_FILL = 3,
	AMID_OP_TIMESTAMP = 4,
};

#define AMID_MAX_HEAPS 16
#define AMID_MAX_PUSH 32

typedef struct {
	char name[256];
	char driverName[256];
	char driverInfo[256];
	uint32_t type, vendor, device, api, driverVersion, driverID;
	uint32_t heapCount;
	uint64_t heapSize[AMID_MAX_HEAPS], heapBudget[AMID_MAX_HEAPS], heapUsage[AMID_MAX_HEAPS];
	uint32_t heapFlags[AMID_MAX_HEAPS];
	int32_t hasBudget;
	uint32_t subgroupSize, subgroupOps, subgroupStages;
	uint32_t maxShared, maxInvocations, maxGroupSize[3], maxGroupCount[3];
	uint64_t maxStorageRange, maxAllocation, maxBufferSize, minStorageAlign;
	uint32_t maxPushConstants, maxBoundSets, maxStorageBuffersPerStage;
	float timestampPeriod;
	uint32_t timestampBits;
	int32_t queueFamily; // a family with compute, -1 when there is none
	int32_t float16, coopmatKHR, coopmatNV;
} amid_info;

typedef struct {
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;
	uint32_t family;
	VkCommandPool cmdpool;
	VkPhysicalDeviceMemoryProperties mem;
	int32_t hasBudget;
} amid_dev;

typedef struct {
	VkShaderModule module;
	VkDescriptorSetLayout setLayout;
	VkPipelineLayout layout;
	VkPipeline pipe;
} amid_pipe;

// amid_op is one recorded command. A dispatch binds pipe/layout/set, pushes npush words
// and dispatches groups; a copy copies size bytes from src+srcOff to dst+dstOff; a fill
// writes the 32-bit value over size bytes of dst from dstOff; a timestamp writes query
// number `query` after all earlier work; a barrier makes every earlier shader or transfer
// write visible to every later shader or transfer access.
typedef struct {
	uint32_t kind;
	uint32_t npush;
	uint32_t groups[3];
	uint32_t value;
	uint32_t query;
	VkPipeline pipe;
	VkPipelineLayout layout;
	VkDescriptorSet set;
	VkBuffer src, dst;
	uint64_t srcOff, dstOff, size;
	uint32_t push[AMID_MAX_PUSH];
} amid_op;

int amid_load(const char *name);
VkResult amid_instance(uint32_t *apiVersion, VkInstance *out);
void amid_instance_destroy(VkInstance inst);
VkResult amid_physical_count(VkInstance inst, uint32_t *n);
VkResult amid_physical_info(VkInstance inst, uint32_t index, amid_info *out);
VkResult amid_device(VkInstance inst, uint32_t index, amid_dev *out);
void amid_device_destroy(amid_dev *d);
void amid_budget(amid_dev *d, uint64_t *budget, uint64_t *usage, uint32_t *n);
int amid_malloc_in_use(uint64_t *out);

VkResult amid_alloc(amid_dev *d, uint64_t size, int kind, VkDeviceMemory *mem, VkBuffer *buf, void **mapped);
void amid_free(amid_dev *d, VkDeviceMemory mem, VkBuffer buf, int mapped);

VkResult amid_pipeline(amid_dev *d, const uint32_t *code, size_t size, uint32_t nbind, uint32_t pushBytes,
                       const uint32_t *spec, uint32_t nspec, amid_pipe *out);
void amid_pipeline_destroy(amid_dev *d, amid_pipe *p);

VkResult amid_pool(amid_dev *d, uint32_t sets, uint32_t descriptors, VkDescriptorPool *out);
void amid_pool_destroy(amid_dev *d, VkDescriptorPool pool);
VkResult amid_set(amid_dev *d, VkDescriptorPool pool, VkDescriptorSetLayout layout, uint32_t n,
                  const VkBuffer *bufs, const uint64_t *offs, const uint64_t *ranges, VkDescriptorSet *out);

VkResult amid_cmd(amid_dev *d, VkCommandBuffer *cb, VkFence *fence);
void amid_cmd_destroy(amid_dev *d, VkCommandBuffer cb, VkFence fence);
VkResult amid_query_pool(amid_dev *d, uint32_t n, VkQueryPool *out);
void amid_query_pool_destroy(amid_dev *d, VkQueryPool qp);
VkResult amid_record(amid_dev *d, VkCommandBuffer cb, VkQueryPool qp, uint32_t nq, const amid_op *ops, uint32_t n);
VkResult amid_submit(amid_dev *d, VkCommandBuffer cb, VkFence fence);
VkResult amid_wait(amid_dev *d, VkFence fence, uint64_t timeout);
VkResult amid_queries(amid_dev *d, VkQueryPool qp, uint32_t n, uint64_t *out);
VkResult amid_idle(amid_dev *d);

#endif
