//go:build cgo

#include "amidvk.h"

#include <dlfcn.h>
#include <string.h>

// Entry points, fetched once the loader is open and again for each instance (the loader
// returns trampolines that dispatch on the device, so one table serves every device).
static PFN_vkGetInstanceProcAddr gipa;
#define FN(name) static PFN_##name p_##name
FN(vkEnumerateInstanceVersion);
FN(vkCreateInstance);
FN(vkDestroyInstance);
FN(vkEnumeratePhysicalDevices);
FN(vkGetPhysicalDeviceProperties);
FN(vkGetPhysicalDeviceProperties2);
FN(vkGetPhysicalDeviceFeatures2);
FN(vkGetPhysicalDeviceMemoryProperties);
FN(vkGetPhysicalDeviceMemoryProperties2);
FN(vkGetPhysicalDeviceQueueFamilyProperties);
FN(vkEnumerateDeviceExtensionProperties);
FN(vkCreateDevice);
FN(vkDestroyDevice);
FN(vkGetDeviceQueue);
FN(vkCreateCommandPool);
FN(vkDestroyCommandPool);
FN(vkAllocateCommandBuffers);
FN(vkFreeCommandBuffers);
FN(vkBeginCommandBuffer);
FN(vkEndCommandBuffer);
FN(vkCmdBindPipeline);
FN(vkCmdBindDescriptorSets);
FN(vkCmdPushConstants);
FN(vkCmdDispatch);
FN(vkCmdPipelineBarrier);
FN(vkCmdCopyBuffer);
FN(vkCmdFillBuffer);
FN(vkCmdWriteTimestamp);
FN(vkCmdResetQueryPool);
FN(vkCreateQueryPool);
FN(vkDestroyQueryPool);
FN(vkGetQueryPoolResults);
FN(vkCreateFence);
FN(vkDestroyFence);
FN(vkResetFences);
FN(vkWaitForFences);
FN(vkQueueSubmit);
FN(vkDeviceWaitIdle);
FN(vkAllocateMemory);
FN(vkFreeMemory);
FN(vkMapMemory);
FN(vkUnmapMemory);
FN(vkCreateBuffer);
FN(vkDestroyBuffer);
FN(vkGetBufferMemoryRequirements);
FN(vkBindBufferMemory);
FN(vkCreateShaderModule);
FN(vkDestroyShaderModule);
FN(vkCreateDescriptorSetLayout);
FN(vkDestroyDescriptorSetLayout);
FN(vkCreatePipelineLayout);
FN(vkDestroyPipelineLayout);
FN(vkCreateComputePipelines);
FN(vkDestroyPipeline);
FN(vkCreateDescriptorPool);
FN(vkDestroyDescriptorPool);
FN(vkAllocateDescriptorSets);
FN(vkUpdateDescriptorSets);
#undef FN

#define LOAD(inst, name) p_##name = (PFN_##name)gipa(inst, #name)

int amid_load(const char *name) {
	if (gipa) {
		return AMID_LOADED;
	}
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		return AMID_NO_LIBRARY;
	}
	gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
	if (!gipa) {
		return AMID_NO_ENTRY;
	}
	LOAD(NULL, vkEnumerateInstanceVersion);
	LOAD(NULL, vkCreateInstance);
	if (!p_vkCreateInstance) {
		gipa = NULL;
		return AMID_NO_ENTRY;
	}
	return AMID_LOADED;
}

static void load_instance(VkInstance inst) {
	LOAD(inst, vkDestroyInstance);
	LOAD(inst, vkEnumeratePhysicalDevices);
	LOAD(inst, vkGetPhysicalDeviceProperties);
	LOAD(inst, vkGetPhysicalDeviceProperties2);
	LOAD(inst, vkGetPhysicalDeviceFeatures2);
	LOAD(inst, vkGetPhysicalDeviceMemoryProperties);
	LOAD(inst, vkGetPhysicalDeviceMemoryProperties2);
	LOAD(inst, vkGetPhysicalDeviceQueueFamilyProperties);
	LOAD(inst, vkEnumerateDeviceExtensionProperties);
	LOAD(inst, vkCreateDevice);
	LOAD(inst, vkDestroyDevice);
	LOAD(inst, vkGetDeviceQueue);
	LOAD(inst, vkCreateCommandPool);
	LOAD(inst, vkDestroyCommandPool);
	LOAD(inst, vkAllocateCommandBuffers);
	LOAD(inst, vkFreeCommandBuffers);
	LOAD(inst, vkBeginCommandBuffer);
	LOAD(inst, vkEndCommandBuffer);
	LOAD(inst, vkCmdBindPipeline);
	LOAD(inst, vkCmdBindDescriptorSets);
	LOAD(inst, vkCmdPushConstants);
	LOAD(inst, vkCmdDispatch);
	LOAD(inst, vkCmdPipelineBarrier);
	LOAD(inst, vkCmdCopyBuffer);
	LOAD(inst, vkCmdFillBuffer);
	LOAD(inst, vkCmdWriteTimestamp);
	LOAD(inst, vkCmdResetQueryPool);
	LOAD(inst, vkCreateQueryPool);
	LOAD(inst, vkDestroyQueryPool);
	LOAD(inst, vkGetQueryPoolResults);
	LOAD(inst, vkCreateFence);
	LOAD(inst, vkDestroyFence);
	LOAD(inst, vkResetFences);
	LOAD(inst, vkWaitForFences);
	LOAD(inst, vkQueueSubmit);
	LOAD(inst, vkDeviceWaitIdle);
	LOAD(inst, vkAllocateMemory);
	LOAD(inst, vkFreeMemory);
	LOAD(inst, vkMapMemory);
	LOAD(inst, vkUnmapMemory);
	LOAD(inst, vkCreateBuffer);
	LOAD(inst, vkDestroyBuffer);
	LOAD(inst, vkGetBufferMemoryRequirements);
	LOAD(inst, vkBindBufferMemory);
	LOAD(inst, vkCreateShaderModule);
	LOAD(inst, vkDestroyShaderModule);
	LOAD(inst, vkCreateDescriptorSetLayout);
	LOAD(inst, vkDestroyDescriptorSetLayout);
	LOAD(inst, vkCreatePipelineLayout);
	LOAD(inst, vkDestroyPipelineLayout);
	LOAD(inst, vkCreateComputePipelines);
	LOAD(inst, vkDestroyPipeline);
	LOAD(inst, vkCreateDescriptorPool);
	LOAD(inst, vkDestroyDescriptorPool);
	LOAD(inst, vkAllocateDescriptorSets);
	LOAD(inst, vkUpdateDescriptorSets);
}

VkResult amid_instance(uint32_t *apiVersion, VkInstance *out) {
	uint32_t v = VK_API_VERSION_1_0;
	if (p_vkEnumerateInstanceVersion) {
		p_vkEnumerateInstanceVersion(&v);
	}
	*apiVersion = v;
	if (v < VK_API_VERSION_1_1) {
		return VK_ERROR_INCOMPATIBLE_DRIVER;
	}
	VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
	app.pApplicationName = "amid";
	app.pEngineName = "amid-engine";
	app.apiVersion = v < VK_API_VERSION_1_3 ? v : VK_API_VERSION_1_3;
	VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
	ci.pApplicationInfo = &app;
	VkResult r = p_vkCreateInstance(&ci, NULL, out);
	if (r != VK_SUCCESS) {
		return r;
	}
	load_instance(*out);
	if (!p_vkGetPhysicalDeviceProperties2 || !p_vkCreateDevice || !p_vkCreateComputePipelines) {
		p_vkDestroyInstance(*out, NULL);
		return VK_ERROR_INCOMPATIBLE_DRIVER;
	}
	return VK_SUCCESS;
}

void amid_instance_destroy(VkInstance inst) { p_vkDestroyInstance(inst, NULL); }

VkResult amid_physical_count(VkInstance inst, uint32_t *n) {
	return p_vkEnumeratePhysicalDevices(inst, n, NULL);
}

static VkPhysicalDevice physical(VkInstance inst, uint32_t index) {
	VkPhysicalDevice devs[32];
	uint32_t n = 32;
	VkResult r = p_vkEnumeratePhysicalDevices(inst, &n, devs);
	if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || index >= n) {
		return VK_NULL_HANDLE;
	}
	return devs[index];
}

static int has_extension(VkPhysicalDevice pd, const char *name) {
	uint32_t n = 0;
	if (p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) {
		return 0;
	}
	VkExtensionProperties ext[512];
	if (n > 512) {
		n = 512;
	}
	VkResult r = p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (strcmp(ext[i].extensionName, name) == 0) {
			return 1;
		}
	}
	return 0;
}

// compute_family picks a queue family with compute: a compute-only family with
// timestamps first, then any with timestamps, then any with compute; -1 without one.
static int compute_family(VkPhysicalDevice pd, uint32_t *tsBits) {
	VkQueueFamilyProperties fam[32];
	uint32_t n = 32;
	p_vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fam);
	int best = -1, score = -1;
	for (uint32_t i = 0; i < n; i++) {
		if (!(fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || fam[i].queueCount == 0) {
			continue;
		}
		int s = 1;
		if (fam[i].timestampValidBits > 0) {
			s += 2;
		}
		if (!(fam[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
			s += 1;
		}
		if (s > score) {
			score = s;
			best = (int)i;
			*tsBits = fam[i].timestampValidBits;
		}
	}
	return best;
}

static void heaps(VkPhysicalDevice pd, int budget, uint32_t *n, uint64_t *size, uint64_t *bud, uint64_t *use,
                  uint32_t *flags) {
	VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
	VkPhysicalDeviceMemoryProperties2 mp = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
	if (budget) {
		mp.pNext = &b;
	}
	p_vkGetPhysicalDeviceMemoryProperties2(pd, &mp);
	uint32_t h = mp.memoryProperties.memoryHeapCount;
	if (h > AMID_MAX_HEAPS) {
		h = AMID_MAX_HEAPS;
	}
	*n = h;
	for (uint32_t i = 0; i < h; i++) {
		if (size) {
			size[i] = mp.memoryProperties.memoryHeaps[i].size;
		}
		if (flags) {
			flags[i] = mp.memoryProperties.memoryHeaps[i].flags;
		}
		bud[i] = budget ? b.heapBudget[i] : 0;
		use[i] = budget ? b.heapUsage[i] : 0;
	}
}

VkResult amid_physical_info(VkInstance inst, uint32_t index, amid_info *out) {
	memset(out, 0, sizeof *out);
	VkPhysicalDevice pd = physical(inst, index);
	if (!pd) {
		return VK_ERROR_INITIALIZATION_FAILED;
	}
	VkPhysicalDeviceProperties base;
	p_vkGetPhysicalDeviceProperties(pd, &base);
	int v12 = base.apiVersion >= VK_API_VERSION_1_2;
	int driverProps = v12 || has_extension(pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);

	VkPhysicalDeviceSubgroupProperties sub = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
	VkPhysicalDeviceMaintenance3Properties m3 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
	VkPhysicalDeviceDriverProperties drv = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
	VkPhysicalDeviceProperties2 p2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
	p2.pNext = &sub;
	sub.pNext = &m3;
	if (driverProps) {
		m3.pNext = &drv;
	}
	p_vkGetPhysicalDeviceProperties2(pd, &p2);
	VkPhysicalDeviceProperties *p = &p2.properties;

	strncpy(out->name, p->deviceName, sizeof out->name - 1);
	if (driverProps) {
		strncpy(out->driverName, drv.driverName, sizeof out->driverName - 1);
		strncpy(out->driverInfo, drv.driverInfo, sizeof out->driverInfo - 1);
		out->driverID = drv.driverID;
	}
	out->type = p->deviceType;
	out->vendor = p->vendorID;
	out->device = p->deviceID;
	out->api = p->apiVersion;
	out->driverVersion = p->driverVersion;
	out->subgroupSize = sub.subgroupSize;
	out->subgroupOps = sub.supportedOperations;
	out->subgroupStages = sub.supportedStages;
	out->maxShared = p->limits.maxComputeSharedMemorySize;
	out->maxInvocations = p->limits.maxComputeWorkGroupInvocations;
	for (int i = 0; i < 3; i++) {
		out->maxGroupSize[i] = p->limits.maxComputeWorkGroupSize[i];
		out->maxGroupCount[i] = p->limits.maxComputeWorkGroupCount[i];
	}
	out->maxStorageRange = p->limits.maxStorageBufferRange;
	out->maxAllocation = m3.maxMemoryAllocationSize;
	out->maxBufferSize = UINT64_MAX;
	out->minStorageAlign = p->limits.minStorageBufferOffsetAlignment;
	out->maxPushConstants = p->limits.maxPushConstantsSize;
	out->maxBoundSets = p->limits.maxBoundDescriptorSets;
	out->maxStorageBuffersPerStage = p->limits.maxPerStageDescriptorStorageBuffers;
	out->timestampPeriod = p->limits.timestampPeriod;
	uint32_t ts = 0;
	out->queueFamily = compute_family(pd, &ts);
	out->timestampBits = p->limits.timestampComputeAndGraphics || out->queueFamily >= 0 ? ts : 0;

	if (v12 || has_extension(pd, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) {
		VkPhysicalDeviceShaderFloat16Int8Features f16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
		VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
		f2.pNext = &f16;
		p_vkGetPhysicalDeviceFeatures2(pd, &f2);
		out->float16 = f16.shaderFloat16;
	}
	out->coopmatKHR = has_extension(pd, "VK_KHR_cooperative_matrix");
	out->coopmatNV = has_extension(pd, "VK_NV_cooperative_matrix");
	out->hasBudget = has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	heaps(pd, out->hasBudget, &out->heapCount, out->heapSize, out->heapBudget, out->heapUsage, out->heapFlags);
	return VK_SUCCESS;
}

VkResult amid_device(VkInstance inst, uint32_t index, amid_dev *out) {
	memset(out, 0, sizeof *out);
	VkPhysicalDevice pd = physical(inst, index);
	if (!pd) {
		return VK_ERROR_INITIALIZATION_FAILED;
	}
	uint32_t ts = 0;
	int fam = compute_family(pd, &ts);
	if (fam < 0) {
		return VK_ERROR_FEATURE_NOT_PRESENT;
	}
	float prio = 1;
	VkDeviceQueueCreateInfo q = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
	q.queueFamilyIndex = (uint32_t)fam;
	q.queueCount = 1;
	q.pQueuePriorities = &prio;
	const char *ext[1];
	uint32_t next = 0;
	out->hasBudget = has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	if (out->hasBudget) {
		ext[next++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	}
	VkDeviceCreateInfo ci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
	ci.queueCreateInfoCount = 1;
	ci.pQueueCreateInfos = &q;
	ci.enabledExtensionCount = next;
	ci.ppEnabledExtensionNames = ext;
	VkResult r = p_vkCreateDevice(pd, &ci, NULL, &out->dev);
	if (r != VK_SUCCESS) {
		return r;
	}
	out->phys = pd;
	out->family = (uint32_t)fam;
	p_vkGetDeviceQueue(out->dev, out->family, 0, &out->queue);
	p_vkGetPhysicalDeviceMemoryProperties(pd, &out->mem);
	VkCommandPoolCreateInfo pc = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
	pc.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
	pc.queueFamilyIndex = out->family;
	r = p_vkCreateCommandPool(out->dev, &pc, NULL, &out->cmdpool);
	if (r != VK_SUCCESS) {
		p_vkDestroyDevice(out->dev, NULL);
		out->dev = VK_NULL_HANDLE;
	}
	return r;
}

void amid_device_destroy(amid_dev *d) {
	if (!d->dev) {
		return;
	}
	p_vkDeviceWaitIdle(d->dev);
	p_vkDestroyCommandPool(d->dev, d->cmdpool, NULL);
	p_vkDestroyDevice(d->dev, NULL);
	d->dev = VK_NULL_HANDLE;
}

void amid_budget(amid_dev *d, uint64_t *budget, uint64_t *usage, uint32_t *n) {
	heaps(d->phys, d->hasBudget, n, NULL, budget, usage, NULL);
}

// memory_type picks the first type allowed by bits with all of want and, when possible,
// all of prefer.
static int memory_type(amid_dev *d, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
	int fallback = -1;
	for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++) {
		VkMemoryPropertyFlags f = d->mem.memoryTypes[i].propertyFlags;
		if (!(bits & (1u << i)) || (f & want) != want) {
			continue;
		}
		if ((f & prefer) == prefer) {
			return (int)i;
		}
		if (fallback < 0) {
			fallback = (int)i;
		}
	}
	return fallback;
}

VkResult amid_alloc(amid_dev *d, uint64_t size, int kind, VkDeviceMemory *mem, VkBuffer *buf, void **mapped) {
	*mem = VK_NULL_HANDLE;
	*buf = VK_NULL_HANDLE;
	*mapped = NULL;
	VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
	bi.size = size;
	bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
	bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
	VkResult r = p_vkCreateBuffer(d->dev, &bi, NULL, buf);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkMemoryRequirements req;
	p_vkGetBufferMemoryRequirements(d->dev, *buf, &req);
	int t;
	switch (kind) {
	case AMID_MEM_UPLOAD:
		t = memory_type(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
		break;
	case AMID_MEM_READBACK:
		t = memory_type(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
		                VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
		break;
	default:
		t = memory_type(d, req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
	}
	if (t < 0) {
		p_vkDestroyBuffer(d->dev, *buf, NULL);
		*buf = VK_NULL_HANDLE;
		return VK_ERROR_FEATURE_NOT_PRESENT;
	}
	VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
	ai.allocationSize = req.size;
	ai.memoryTypeIndex = (uint32_t)t;
	r = p_vkAllocateMemory(d->dev, &ai, NULL, mem);
	if (r == VK_SUCCESS) {
		r = p_vkBindBufferMemory(d->dev, *buf, *mem, 0);
	}
	if (r == VK_SUCCESS && kind != AMID_MEM_DEVICE) {
		r = p_vkMapMemory(d->dev, *mem, 0, VK_WHOLE_SIZE, 0, mapped);
	}
	if (r != VK_SUCCESS) {
		p_vkDestroyBuffer(d->dev, *buf, NULL);
		if (*mem) {
			p_vkFreeMemory(d->dev, *mem, NULL);
		}
		*mem = VK_NULL_HANDLE;
		*buf = VK_NULL_HANDLE;
		*mapped = NULL;
	}
	return r;
}

void amid_free(amid_dev *d, VkDeviceMemory mem, VkBuffer buf, int mapped) {
	if (mapped) {
		p_vkUnmapMemory(d->dev, mem);
	}
	p_vkDestroyBuffer(d->dev, buf, NULL);
	p_vkFreeMemory(d->dev, mem, NULL);
}

VkResult amid_pipeline(amid_dev *d, const uint32_t *code, size_t size, uint32_t nbind, uint32_t pushBytes,
                       const uint32_t *spec, uint32_t nspec, amid_pipe *out) {
	memset(out, 0, sizeof *out);
	VkShaderModuleCreateInfo mi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
	mi.codeSize = size;
	mi.pCode = code;
	VkResult r = p_vkCreateShaderModule(d->dev, &mi, NULL, &out->module);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkDescriptorSetLayoutBinding b[16];
	if (nbind > 16) {
		nbind = 16;
	}
	for (uint32_t i = 0; i < nbind; i++) {
		VkDescriptorSetLayoutBinding x = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
		b[i] = x;
	}
	VkDescriptorSetLayoutCreateInfo li = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
	li.bindingCount = nbind;
	li.pBindings = b;
	r = p_vkCreateDescriptorSetLayout(d->dev, &li, NULL, &out->setLayout);
	if (r != VK_SUCCESS) {
		amid_pipeline_destroy(d, out);
		return r;
	}
	VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes};
	VkPipelineLayoutCreateInfo pl = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
	pl.setLayoutCount = 1;
	pl.pSetLayouts = &out->setLayout;
	pl.pushConstantRangeCount = pushBytes ? 1 : 0;
	pl.pPushConstantRanges = &pr;
	r = p_vkCreatePipelineLayout(d->dev, &pl, NULL, &out->layout);
	if (r != VK_SUCCESS) {
		amid_pipeline_destroy(d, out);
		return r;
	}
	VkSpecializationMapEntry me[32];
	if (nspec > 32) {
		nspec = 32;
	}
	for (uint32_t i = 0; i < nspec; i++) {
		VkSpecializationMapEntry e = {i, i * 4, 4};
		me[i] = e;
	}
	VkSpecializationInfo si = {nspec, me, nspec * 4, spec};
	VkComputePipelineCreateInfo ci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
	ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
	ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
	ci.stage.module = out->module;
	ci.stage.pName = "main";
	ci.stage.pSpecializationInfo = nspec ? &si : NULL;
	ci.layout = out->layout;
	r = p_vkCreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, &out->pipe);
	if (r != VK_SUCCESS) {
		amid_pipeline_destroy(d, out);
	}
	return r;
}

void amid_pipeline_destroy(amid_dev *d, amid_pipe *p) {
	if (p->pipe) {
		p_vkDestroyPipeline(d->dev, p->pipe, NULL);
	}
	if (p->layout) {
		p_vkDestroyPipelineLayout(d->dev, p->layout, NULL);
	}
	if (p->setLayout) {
		p_vkDestroyDescriptorSetLayout(d->dev, p->setLayout, NULL);
	}
	if (p->module) {
		p_vkDestroyShaderModule(d->dev, p->module, NULL);
	}
	memset(p, 0, sizeof *p);
}

VkResult amid_pool(amid_dev *d, uint32_t sets, uint32_t descriptors, VkDescriptorPool *out) {
	VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
	VkDescriptorPoolCreateInfo ci = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
	ci.maxSets = sets;
	ci.poolSizeCount = 1;
	ci.pPoolSizes = &ps;
	return p_vkCreateDescriptorPool(d->dev, &ci, NULL, out);
}

void amid_pool_destroy(amid_dev *d, VkDescriptorPool pool) { p_vkDestroyDescriptorPool(d->dev, pool, NULL); }

VkResult amid_set(amid_dev *d, VkDescriptorPool pool, VkDescriptorSetLayout layout, uint32_t n,
                  const VkBuffer *bufs, const uint64_t *offs, const uint64_t *ranges, VkDescriptorSet *out) {
	VkDescriptorSetAllocateInfo ai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
	ai.descriptorPool = pool;
	ai.descriptorSetCount = 1;
	ai.pSetLayouts = &layout;
	VkResult r = p_vkAllocateDescriptorSets(d->dev, &ai, out);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkDescriptorBufferInfo bi[16];
	VkWriteDescriptorSet w[16];
	if (n > 16) {
		n = 16;
	}
	for (uint32_t i = 0; i < n; i++) {
		VkDescriptorBufferInfo b = {bufs[i], offs[i], ranges[i]};
		bi[i] = b;
		VkWriteDescriptorSet x = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
		x.dstSet = *out;
		x.dstBinding = i;
		x.descriptorCount = 1;
		x.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
		x.pBufferInfo = &bi[i];
		w[i] = x;
	}
	p_vkUpdateDescriptorSets(d->dev, n, w, 0, NULL);
	return VK_SUCCESS;
}

VkResult amid_cmd(amid_dev *d, VkCommandBuffer *cb, VkFence *fence) {
	VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
	ai.commandPool = d->cmdpool;
	ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
	ai.commandBufferCount = 1;
	VkResult r = p_vkAllocateCommandBuffers(d->dev, &ai, cb);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
	r = p_vkCreateFence(d->dev, &fi, NULL, fence);
	if (r != VK_SUCCESS) {
		p_vkFreeCommandBuffers(d->dev, d->cmdpool, 1, cb);
	}
	return r;
}

void amid_cmd_destroy(amid_dev *d, VkCommandBuffer cb, VkFence fence) {
	p_vkFreeCommandBuffers(d->dev, d->cmdpool, 1, &cb);
	p_vkDestroyFence(d->dev, fence, NULL);
}

VkResult amid_query_pool(amid_dev *d, uint32_t n, VkQueryPool *out) {
	VkQueryPoolCreateInfo ci = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
	ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
	ci.queryCount = n;
	return p_vkCreateQueryPool(d->dev, &ci, NULL, out);
}

void amid_query_pool_destroy(amid_dev *d, VkQueryPool qp) { p_vkDestroyQueryPool(d->dev, qp, NULL); }

static void barrier(VkCommandBuffer cb, int host) {
	VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
	mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
	mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
	                   VK_ACCESS_TRANSFER_WRITE_BIT;
	VkPipelineStageFlags src = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkPipelineStageFlags dst = src;
	if (host) {
		mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
		dst = VK_PIPELINE_STAGE_HOST_BIT;
	}
	p_vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

VkResult amid_record(amid_dev *d, VkCommandBuffer cb, VkQueryPool qp, uint32_t nq, const amid_op *ops, uint32_t n) {
	(void)d;
	VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	VkResult r = p_vkBeginCommandBuffer(cb, &bi);
	if (r != VK_SUCCESS) {
		return r;
	}
	if (qp && nq) {
		p_vkCmdResetQueryPool(cb, qp, 0, nq);
	}
	for (uint32_t i = 0; i < n; i++) {
		const amid_op *o = &ops[i];
		switch (o->kind) {
		case AMID_OP_DISPATCH:
			p_vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, o->pipe);
			p_vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, o->layout, 0, 1, &o->set, 0, NULL);
			if (o->npush) {
				p_vkCmdPushConstants(cb, o->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, o->npush * 4, o->push);
			}
			p_vkCmdDispatch(cb, o->groups[0], o->groups[1], o->groups[2]);
			break;
		case AMID_OP_BARRIER:
			barrier(cb, (int)o->value);
			break;
		case AMID_OP_COPY: {
			VkBufferCopy c = {o->srcOff, o->dstOff, o->size};
			p_vkCmdCopyBuffer(cb, o->src, o->dst, 1, &c);
			break;
		}
		case AMID_OP_FILL:
			p_vkCmdFillBuffer(cb, o->dst, o->dstOff, o->size, o->value);
			break;
		case AMID_OP_TIMESTAMP:
			if (qp) {
				p_vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, o->query);
			}
			break;
		}
	}
	return p_vkEndCommandBuffer(cb);
}

VkResult amid_submit(amid_dev *d, VkCommandBuffer cb, VkFence fence) {
	VkResult r = p_vkResetFences(d->dev, 1, &fence);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
	si.commandBufferCount = 1;
	si.pCommandBuffers = &cb;
	return p_vkQueueSubmit(d->queue, 1, &si, fence);
}

VkResult amid_wait(amid_dev *d, VkFence fence, uint64_t timeout) {
	return p_vkWaitForFences(d->dev, 1, &fence, VK_TRUE, timeout);
}

VkResult amid_queries(amid_dev *d, VkQueryPool qp, uint32_t n, uint64_t *out) {
	return p_vkGetQueryPoolResults(d->dev, qp, 0, n, n * sizeof(uint64_t), out, sizeof(uint64_t),
	                               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
}

VkResult amid_idle(amid_dev *d) { return p_vkDeviceWaitIdle(d->dev); }

// glibc's mallinfo2 (2.33 and later), looked up at run time so that the library loads
// with an older C library too.
typedef struct {
	size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
} amid_mallinfo2_t;

int amid_malloc_in_use(uint64_t *out) {
	static amid_mallinfo2_t (*fn)(void);
	static int looked;
	if (!looked) {
		void *self = dlopen(NULL, RTLD_NOW);
		if (self) {
			fn = (amid_mallinfo2_t (*)(void))dlsym(self, "mallinfo2");
		}
		looked = 1;
	}
	if (!fn) {
		return 0;
	}
	amid_mallinfo2_t m = fn();
	*out = (uint64_t)m.uordblks + (uint64_t)m.hblkhd;
	return 1;
}
